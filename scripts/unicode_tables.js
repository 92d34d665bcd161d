// Unicode as node's engine has it (from the ICU node was built with), the tables the reference
// tokenizers (@lenml/tokenizers, gpt-3-encoder) run on, as JSON on standard output:
//   runs: every code point's general category (\p{gc=..}) as [first, last, "Lu"];
//   normal: [cp, ccc, nfd, nfkd, pair] for every code point with a canonical combining class
//     (found by the order String.prototype.normalize gives it against one mark of each class in
//     refs) or a decomposition, Hangul syllables (algorithmic) aside; nfd and nfkd are code point
//     lists, empty where the code point is its own; pair: [first, second] when the code point is
//     a primary composite (NFC composes it from them), else null;
//   texts: seeded random runs of bases and marks of every script, and every primary composite
//     decomposed, with their NFC, NFD, NFKC and NFKD, for the tests.
//   node unicode_tables.js [REFS.json]   (REFS: {"ccc": code point, ...}, one mark per class)
// Read by scripts/unicode_delta.sh (with refs) and by the tokenizer tests' fetch step.
const fs = require('fs');
const cats = ['Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'Mn', 'Mc', 'Me', 'Nd', 'Nl', 'No', 'Pc', 'Pd', 'Ps', 'Pe',
              'Pi', 'Pf', 'Po', 'Sm', 'Sc', 'Sk', 'So', 'Zs', 'Zl', 'Zp', 'Cc', 'Cf', 'Cs', 'Co', 'Cn'];
const tests = cats.map((c) => new RegExp('^\\p{gc=' + c + '}$', 'u'));
const gc = new Array(0x110000);
const runs = [];
let prev = null, start = 0;
for (let cp = 0; cp <= 0x10FFFF; ++cp) {
  const s = String.fromCodePoint(cp);
  const g = cp >= 0xD800 && cp <= 0xDFFF ? 'Cs' : cats.find((c, i) => tests[i].test(s));
  gc[cp] = g;
  if (g !== prev) {
    if (prev !== null) runs.push([start, cp - 1, prev]);
    prev = g;
    start = cp;
  }
}
runs.push([start, 0x10FFFF, prev]);

const cps = (s) => Array.from(s, (c) => c.codePointAt(0));
const out = { node: process.versions.node, icu: process.versions.icu, unicode: process.versions.unicode, runs };

// A mark's class from the order NFD puts it in after "a" against each reference mark: it goes
// before a reference of a higher class, after one of a lower, and keeps its place beside one of
// its own (or when its class is 0).
function ccc_of(cp, refs) {
  const m = String.fromCodePoint(cp);
  let swapped = false, equal = null;
  for (const [value, ref] of refs) {
    const r = String.fromCodePoint(ref);
    const before = ('a' + r + m).normalize('NFD') !== 'a' + r + m;  // moved: m's class is lower
    const after = ('a' + m + r).normalize('NFD') !== 'a' + m + r;   // moved: m's class is higher
    if (before || after) swapped = true;
    else equal = equal === null ? value : equal;
  }
  if (!swapped) return 0;
  if (equal === null) throw new Error('U+' + cp.toString(16) + ' has a combining class no reference has');
  return equal;
}

if (process.argv[2]) {
  const refs = Object.entries(JSON.parse(fs.readFileSync(process.argv[2], 'utf-8')))
    .map(([v, cp]) => [Number(v), cp]).sort((a, b) => a[0] - b[0]);
  out.normal = [];
  for (let cp = 0; cp <= 0x10FFFF; ++cp) {
    if (gc[cp] === 'Cn' || gc[cp] === 'Cs' || (cp >= 0xAC00 && cp <= 0xD7A3)) continue;
    const s = String.fromCodePoint(cp);
    const nfd = s.normalize('NFD'), nfkd = s.normalize('NFKD');
    const ccc = nfd === s && (gc[cp] === 'Mn' || gc[cp] === 'Mc' || gc[cp] === 'Me') ? ccc_of(cp, refs) : 0;
    if (ccc === 0 && nfd === s && nfkd === s) continue;
    let pair = null;
    if (nfd !== s && nfd.normalize('NFC') === s) {
      const d = cps(nfd), first = cps(String.fromCodePoint(...d.slice(0, -1)).normalize('NFC'));
      if (first.length !== 1) throw new Error('U+' + cp.toString(16) + ': no single first of a pair');
      pair = [first[0], d[d.length - 1]];
    }
    out.normal.push([cp, ccc, nfd === s ? [] : cps(nfd), nfkd === s ? [] : cps(nfkd), pair]);
  }
}

// Texts: a base (a letter of any script, a Hangul jamo or syllable, a composite) and 0 to 4
// marks or other characters drawn from every code point node gives a class or decomposition.
let seed = 20261129;  // xorshift32: the same texts from any node
const rand = (n) => {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed % n;
};
const marks = [], letters = [];
for (let cp = 0; cp <= 0x10FFFF; ++cp) {
  if (gc[cp] === 'Mn' || gc[cp] === 'Mc' || gc[cp] === 'Me') marks.push(cp);
  else if (gc[cp][0] === 'L' || gc[cp] === 'Nd' || gc[cp] === 'So') letters.push(cp);
}
const jamo = [0x1100, 0x1161, 0x11A8, 0xAC00, 0xAC01, 0x1112, 0x1175];
out.texts = [];
for (let i = 0; i < 3000; ++i) {
  let t = '';
  for (let k = 1 + rand(6); k > 0; --k) {
    t += String.fromCodePoint(rand(4) === 0 ? jamo[rand(jamo.length)] : letters[rand(letters.length)]);
    for (let j = rand(5); j > 0; --j) t += String.fromCodePoint(rand(3) === 0 ? letters[rand(letters.length)] : marks[rand(marks.length)]);
  }
  out.texts.push([t, t.normalize('NFC'), t.normalize('NFD'), t.normalize('NFKC'), t.normalize('NFKD')]);
}
// And each composite decomposed, with a mark after it half the time: NFC must compose every pair.
for (let cp = 0xA0; cp <= 0x10FFFF; ++cp) {
  if (gc[cp] === 'Cn' || gc[cp] === 'Cs' || (cp >= 0xAC00 && cp <= 0xD7A3)) continue;
  const s = String.fromCodePoint(cp), nfd = s.normalize('NFD');
  if (nfd === s || nfd.normalize('NFC') !== s) continue;
  const t = nfd + (rand(2) ? String.fromCodePoint(marks[rand(marks.length)]) : '');
  out.texts.push([t, t.normalize('NFC'), t.normalize('NFD'), t.normalize('NFKC'), t.normalize('NFKD')]);
}
console.log(JSON.stringify(out));
