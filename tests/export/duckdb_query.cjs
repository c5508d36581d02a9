// Runs SQL with DuckDB (the npm package @duckdb/node-api) for the Parquet
// tests: argv[2] is the package's install prefix (duckdb_node.py installs
// it there), argv[3] a JSON file holding a list of statements. Prints one
// JSON object per statement: {"columns": [...], "types": [...], "rows": [[...]]}
// (values as DuckDB's JSON conversion gives them: big integers as strings),
// or {"error": "..."}. Exit status 0 unless DuckDB itself cannot start.
'use strict';
const path = require('path');
const fs = require('fs');

async function main() {
  const prefix = process.argv[2];
  const statements = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
  const duckdb = require(path.join(prefix, 'node_modules', '@duckdb', 'node-api'));
  const instance = await duckdb.DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  for (const sql of statements) {
    try {
      const result = await conn.runAndReadAll(sql);
      console.log(JSON.stringify({
        columns: result.columnNames(),
        types: result.columnTypes().map((t) => t.toString()),
        rows: result.getRowsJson(),
      }));
    } catch (e) {
      console.log(JSON.stringify({error: String(e.message || e)}));
    }
  }
}

main().catch((e) => {
  console.error('duckdb_query: ' + (e.stack || e));
  process.exit(1);
});
