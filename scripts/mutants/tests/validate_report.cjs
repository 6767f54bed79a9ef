// node validate_report.cjs NODE_MODULES REPORT: checks a report against the
// JSON schema shipped in the npm package mutation-testing-report-schema
// (with ajv); prints the errors and exits 1 if it does not validate.
'use strict';
const path = require('path');
const fs = require('fs');
const [nodeModules, reportPath] = process.argv.slice(2);
const Ajv = require(path.join(nodeModules, 'ajv')).default;
const schema = JSON.parse(fs.readFileSync(path.join(nodeModules,
  'mutation-testing-report-schema', 'dist', 'src', 'mutation-testing-report-schema.json'), 'utf8'));
const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
const report = JSON.parse(fs.readFileSync(reportPath, 'utf8'));
if (validate(report)) {
  console.log('valid');
} else {
  console.log(JSON.stringify(validate.errors, null, 1));
  process.exit(1);
}
