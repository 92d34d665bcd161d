// The ids gpt-3-encoder's own JavaScript port of GPT-2's encoder gives for each text.
//   node gpt2_expected_ids.js PACKAGE_DIR TEXTS.json OUT.json
const fs = require('fs');
const path = require('path');
const [pkg, textsFile, outFile] = process.argv.slice(2);
const { encode } = require(path.resolve(pkg, 'Encoder.js'));
const texts = JSON.parse(fs.readFileSync(textsFile, 'utf-8'));
const cases = texts.map(text => ({ text, ids: encode(text) }));
const tmp = outFile + '.tmp';
fs.writeFileSync(tmp, JSON.stringify({ source: 'gpt-3-encoder 1.1.4 Encoder.js', cases }, null, 1));
fs.renameSync(tmp, outFile);
