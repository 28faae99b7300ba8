import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// Every name a user can import from the package carries TSDoc: each export of the entry points,
// each property of an exported interface, type literal or `as const` object, and each public
// member of an exported class. Checked on the program `npm run build` compiles.

const ROOT = join(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');
const ENTRIES = ['src/index.ts', 'src/testing/index.ts'];

function loadProgram(): ts.Program {
  const configPath = join(ROOT, 'tsconfig.build.json');
  const config = ts.readConfigFile(configPath, (path) => ts.sys.readFile(path));
  if (config.error)
    throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT, undefined, configPath);
  return ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
}

/** Whether a declaration lives in this package's sources (not in a driver's or Node's types). */
function isOwn(declaration: ts.Declaration): boolean {
  return !relative(SRC, declaration.getSourceFile().fileName).startsWith('..');
}

function isInternal(symbol: ts.Symbol, checker: ts.TypeChecker): boolean {
  return symbol.getJsDocTags(checker).some((tag) => tag.name === 'internal');
}

function isPublicMember(declaration: ts.Declaration): boolean {
  const flags = ts.getCombinedModifierFlags(declaration);
  if (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) return false;
  const name = ts.getNameOfDeclaration(declaration);
  return !(name && ts.isPrivateIdentifier(name));
}

/** The names of `members` (own, public, not `@internal`) that have no documentation. */
function undocumentedMembers(
  owner: string,
  members: readonly ts.Symbol[],
  checker: ts.TypeChecker,
): string[] {
  const missing: string[] = [];
  for (const member of members) {
    const declarations = (member.getDeclarations() ?? []).filter(isOwn);
    if (declarations.length === 0 || !declarations.every(isPublicMember)) continue;
    if (isInternal(member, checker)) continue;
    if (member.getDocumentationComment(checker).length === 0) {
      missing.push(`${owner}.${checker.symbolToString(member)}`);
    }
  }
  return missing;
}

/** Properties of the object types `type` is made of (a union's or intersection's parts too). */
function objectProperties(type: ts.Type, checker: ts.TypeChecker): ts.Symbol[] {
  const parts = type.isUnionOrIntersection() ? type.types : [type];
  return parts.flatMap((part) =>
    part.flags & ts.TypeFlags.Object ? checker.getPropertiesOfType(part) : [],
  );
}

/** Every export of the entry points (and their members) that lacks TSDoc. */
function undocumented(): string[] {
  const program = loadProgram();
  const checker = program.getTypeChecker();
  const missing = new Set<string>();
  const seen = new Set<ts.Symbol>();

  for (const entry of ENTRIES) {
    const file = program.getSourceFile(join(ROOT, entry));
    if (!file) throw new Error(`${entry} is not part of tsconfig.build.json`);
    const module = checker.getSymbolAtLocation(file);
    if (!module) throw new Error(`${entry} is not a module`);

    for (const exported of checker.getExportsOfModule(module)) {
      const symbol =
        exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      if (seen.has(symbol)) continue;
      seen.add(symbol);
      const name = exported.getName();
      if (symbol.getDocumentationComment(checker).length === 0) missing.add(name);

      const members: ts.Symbol[] = [];
      if (symbol.flags & ts.SymbolFlags.Class) {
        const instance = checker.getDeclaredTypeOfSymbol(symbol);
        const constructor = checker.getTypeOfSymbol(symbol);
        members.push(...checker.getPropertiesOfType(instance));
        members.push(
          ...checker.getPropertiesOfType(constructor).filter((m) => m.getName() !== 'prototype'),
        );
        const ctor = symbol.members?.get(ts.InternalSymbolName.Constructor);
        if (ctor) members.push(ctor);
      } else if (symbol.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) {
        members.push(...objectProperties(checker.getDeclaredTypeOfSymbol(symbol), checker));
      } else if (symbol.flags & ts.SymbolFlags.Variable) {
        members.push(...objectProperties(checker.getTypeOfSymbol(symbol), checker));
      }
      for (const member of undocumentedMembers(name, members, checker)) missing.add(member);
    }
  }
  return [...missing].sort();
}

describe('TSDoc on the public surface', () => {
  it('documents every export of src/index.ts and src/testing/index.ts and their members', () => {
    const missing = undocumented();
    expect(missing, `${missing.length} undocumented:\n  ${missing.join('\n  ')}`).toEqual([]);
  });
});
