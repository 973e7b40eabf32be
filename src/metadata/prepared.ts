/**
 * A query of the request path built and compiled by Kysely once, then run with each call's values.
 * Building and compiling a small query costs more than SQLite takes to run it: a push's three
 * index transactions took 1.35 ms (median) through the query builder, 0.70 ms with their SQL
 * compiled once (docs/performance.md, "Pushes with the metadata index"). Each dialect's SQL is
 * still Kysely's: the query is built by the same builder, with a marker standing for each value.
 */
import type { Compilable, CompiledQuery, QueryResult } from 'kysely';

/** what runs a compiled query: the Kysely instance or a transaction of it */
export interface Executor {
  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
}

export class PreparedQuery<Name extends string, Row = unknown> {
  private readonly compiled: CompiledQuery<Row>;
  /** per parameter of the compiled query: the value's name, or undefined for a constant of the query */
  private readonly names: (Name | undefined)[];

  /** `build` gets, per name, the marker to give the builder where that value goes */
  constructor(names: readonly Name[], build: (values: Record<Name, never>) => Compilable<Row>) {
    const markers = new Map(names.map((name) => [`\u0000${name}\u0000`, name]));
    this.compiled = build(Object.fromEntries([...markers].map(([marker, name]) => [name, marker])) as Record<Name, never>).compile();
    this.names = this.compiled.parameters.map((p) => (typeof p === 'string' ? markers.get(p) : undefined));
    const missing = names.filter((name) => !this.names.includes(name));
    if (missing.length > 0) throw new Error(`prepared query: ${missing.join(', ')} did not become parameters of ${this.compiled.sql}`);
  }

  run(executor: Executor, values: Record<Name, unknown>): Promise<QueryResult<Row>> {
    const parameters = this.compiled.parameters.map((constant, i) => {
      const name = this.names[i];
      return name === undefined ? constant : values[name];
    });
    return executor.executeQuery({ ...this.compiled, parameters });
  }
}

/**
 * A statement over many rows (`INSERT ... VALUES (...), (...)`: the rebuild's batches) built and
 * compiled once per number of rows, then run with each call's rows: building the query of 50 rows
 * in Kysely cost about a sixth of the rebuild's writes on the main thread (docs/performance.md,
 * "Index rebuild", session 13). `build` gets one row of markers per row, each with a marker per
 * column.
 */
export class PreparedRows<Column extends string, Row = unknown> {
  private readonly byCount = new Map<number, { compiled: CompiledQuery<Row>; places: ([row: number, column: Column] | undefined)[] }>();

  constructor(
    private readonly columns: readonly Column[],
    private readonly build: (rows: Record<Column, never>[]) => Compilable<Row>,
  ) {}

  run(executor: Executor, rows: readonly Record<Column, unknown>[]): Promise<QueryResult<Row>> {
    const { compiled, places } = this.prepared(rows.length);
    const parameters = compiled.parameters.map((constant, i) => {
      const place = places[i];
      return place === undefined ? constant : rows[place[0]][place[1]];
    });
    return executor.executeQuery({ ...compiled, parameters });
  }

  private prepared(count: number) {
    let known = this.byCount.get(count);
    if (known) return known;
    const markers = new Map<string, [number, Column]>();
    const rows = Array.from({ length: count }, (_, row) =>
      Object.fromEntries(
        this.columns.map((column) => {
          const marker = `\u0000${row}\u0000${column}\u0000`;
          markers.set(marker, [row, column]);
          return [column, marker];
        }),
      ) as Record<Column, never>,
    );
    const compiled = this.build(rows).compile();
    const places = compiled.parameters.map((p) => (typeof p === 'string' ? markers.get(p) : undefined));
    if (new Set(compiled.parameters.filter((p) => typeof p === 'string' && markers.has(p))).size !== markers.size) throw new Error(`prepared rows: not every value became a parameter of ${compiled.sql}`);
    known = { compiled, places };
    this.byCount.set(count, known);
    return known;
  }
}
