import { ErrorCode, LeaseError } from '../../core/errors.js';
import type { DynamodbCommand, DynamodbModule } from './dynamodb-driver.js';
import { createTableHint, isTableInUse, isTableMissing } from './dynamodb-errors.js';
import { createTableRequest, describeTableRequest } from './dynamodb-ops.js';

/** Sends one command with the store's deadline and error mapping. */
export type Send = (operation: string, command: DynamodbCommand) => Promise<unknown>;

interface TableDescription {
  TableStatus?: string;
  KeySchema?: { AttributeName?: string; KeyType?: string }[];
  AttributeDefinitions?: { AttributeName?: string; AttributeType?: string }[];
}

/** Statuses in which items can be read and written. */
const USABLE = new Set(['ACTIVE', 'UPDATING']);

/** How long `createTable` waits for a new table to become active. */
export const TABLE_ACTIVE_TIMEOUT_MS = 120_000;

export interface TableTarget {
  readonly sdk: DynamodbModule;
  readonly send: Send;
  readonly table: string;
  /** Where the table lives, for messages: ` at http://…` or ` in us-east-1`, or `''`. */
  readonly where: string;
}

/**
 * Checks that the table exists with the key schema leasehold writes (partition key `resource`,
 * String, no sort key) and is usable, waiting while it is being created. When it is missing it is
 * created (on-demand capacity) if `create`, else this fails, non-retryable, saying how to make it.
 * One `DescribeTable` when all is well.
 */
export async function ensureTable(
  target: TableTarget,
  create: boolean,
  timeoutMs = TABLE_ACTIVE_TIMEOUT_MS,
): Promise<void> {
  let table = await describe(target);
  if (table === undefined) {
    if (!create) throw refuse(target, `does not exist; ${createTableHint(target.table)}`);
    try {
      await target.send(
        'createTable',
        new target.sdk.CreateTableCommand(createTableRequest(target.table)),
      );
    } catch (error) {
      if (!isTableInUse(error)) throw error; // else another process is creating it: wait with it
    }
    table = await describe(target);
    if (table === undefined) throw refuse(target, 'vanished right after it was created');
  }
  checkKeySchema(target, table);
  const deadline = Date.now() + timeoutMs;
  let pause = 50;
  while (!USABLE.has(table.TableStatus ?? '')) {
    if (table.TableStatus !== 'CREATING') {
      throw refuse(target, `is ${table.TableStatus ?? 'in an unknown state'}, not ACTIVE`);
    }
    if (Date.now() + pause > deadline) {
      throw new LeaseError(
        ErrorCode.STORE_UNAVAILABLE,
        `DynamoDB table "${target.table}"${target.where} is still CREATING after ${timeoutMs} ms`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 1000);
    table = (await describe(target)) ?? table;
  }
}

async function describe(target: TableTarget): Promise<TableDescription | undefined> {
  try {
    const answer = (await target.send(
      'describeTable',
      new target.sdk.DescribeTableCommand(describeTableRequest(target.table)),
    )) as { Table?: TableDescription };
    return answer.Table ?? {};
  } catch (error) {
    if (isTableMissing(error)) return undefined;
    throw error;
  }
}

function checkKeySchema(target: TableTarget, table: TableDescription): void {
  const keys = table.KeySchema ?? [];
  const type = table.AttributeDefinitions?.find((a) => a.AttributeName === 'resource');
  const ok =
    keys.length === 1 &&
    keys[0]!.AttributeName === 'resource' &&
    keys[0]!.KeyType === 'HASH' &&
    type?.AttributeType === 'S';
  if (!ok) {
    const found = keys.map((k) => `${k.AttributeName} ${k.KeyType}`).join(', ') || 'none';
    throw refuse(
      target,
      `has key schema [${found}]; leasehold needs partition key "resource" (String) and no sort key: use another table`,
    );
  }
}

function refuse(target: TableTarget, problem: string): LeaseError {
  return new LeaseError(
    ErrorCode.STORE_UNAVAILABLE,
    `DynamoDB table "${target.table}"${target.where} ${problem}`,
    { retryable: false },
  );
}
