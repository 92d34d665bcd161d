// The ids @lenml/tokenizers (transformers.js's tokenizers) gives for each text with each
// tokenizer.json, with the special tokens the file's post-processor adds and without.
//   node hf_expected_ids.js ENCODER_PACKAGE_DIR DIR TEXTS.json OUT.json NAME...
// reads DIR/NAME/tokenizer.json and tokenizer_config.json for each NAME.
const fs = require('fs');
const path = require('path');
const [pkg, dir, textsFile, outFile, ...names] = process.argv.slice(2);
const { TokenizerLoader } = require(path.resolve(pkg, 'dist', 'main.js'));
const texts = JSON.parse(fs.readFileSync(textsFile, 'utf-8'));
const result = { source: '@lenml/tokenizers ' + require(path.resolve(pkg, 'package.json')).version, tokenizers: {} };
for (const name of names) {
  const read = (f) => JSON.parse(fs.readFileSync(path.join(dir, name, f), 'utf-8'));
  const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: read('tokenizer.json'), tokenizerConfig: read('tokenizer_config.json') });
  result.tokenizers[name] = texts.map((text) => ({
    text,
    ids: tok.encode(text, { add_special_tokens: true }),
    ids_plain: tok.encode(text, { add_special_tokens: false }),
  }));
}
const tmp = outFile + '.tmp';
fs.writeFileSync(tmp, JSON.stringify(result));
fs.renameSync(tmp, outFile);
