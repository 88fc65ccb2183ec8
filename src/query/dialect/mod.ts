/** The public surface of Weir's SQL dialect: parse text to an AST, print an AST back as dialect SQL. */
export type * from './ast.ts';
export { numberValue, selectQuery } from './ast.ts';
export { DialectSyntaxError, type SourcePosition } from './errors.ts';
export { tokenize } from './lexer.ts';
export type { Token, TokenType } from './tokens.ts';
export { MAX_DEPTH, MAX_QUERY_LENGTH, parseDialect, type ParseOptions } from './parser.ts';
export {
  literal,
  printDialect,
  printDialectExpr,
  quoteName,
  quoteString,
  type InlineValue,
  type PrintOptions,
} from './print-dialect.ts';
