import { finding, findingIds, FindingLevel, type Diagnosis } from '../../core/doctor.js';

findingIds('memory.process-only');

/** The memory store's setup, always the same: its records live and die with this process. */
export function diagnoseMemory(): Diagnosis {
  return {
    findings: [
      finding(
        'memory.process-only',
        FindingLevel.WARNING,
        'records kept in this process only',
        'leases exclude only callers in this process, and a restart forgets them: tokens start again at 1, so a downstream fence that remembers a higher token refuses the new holders',
        'use a store other processes share (sqlite:, postgres://, redis://, …) for leases between processes',
      ),
    ],
    checked: ['the store kind (memory)'],
  };
}
