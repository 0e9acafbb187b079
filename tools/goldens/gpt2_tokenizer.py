"""GPT-2 tokenizer goldens beyond the fixture's cases (tests/data/hf_gpt2_tiny/).

The oracle is openai/gpt-2's src/encoder.py, its algorithm restated here
(bytes_to_unicode, the pre-tokenization pattern under Python's `regex`
module, merges by rank, every occurrence of the best pair in one pass), over
the fixture's vocab.json and merges.txt. The texts are the cases the
fixture does not reach: Unicode spaces and their neighbours, numbers and
letters of other scripts, marks, case-sensitive contractions, the special
token's text (which encoder.py does not special-case), long words, and
bytes that are not UTF-8. encoder.py takes a Python str; a byte that is not
UTF-8 is read with Python's `surrogateescape` (a lone surrogate, category
Cs: neither a letter, a number nor a space) and written back as that byte.

Writes tests/data/hf_gpt2_tiny/tokenizer_extra_cases.json: each case's
bytes in hex and its ids. Needs the `regex` module (Debian: python3-regex).
"""

import json
import os

import regex

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "tests", "data", "hf_gpt2_tiny")
PATTERN = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def bpe(word, ranks):
    word = tuple(word)
    while len(word) > 1:
        pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
        best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
        if best not in ranks:
            break
        first, second = best
        merged, i = [], 0
        while i < len(word):
            if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                merged.append(first + second)
                i += 2
            else:
                merged.append(word[i])
                i += 1
        word = tuple(merged)
    return word


def encode(data, encoder, ranks):
    byte_encoder = bytes_to_unicode()
    text = data.decode("utf-8", errors="surrogateescape")
    ids = []
    for token in PATTERN.findall(text):
        symbols = "".join(byte_encoder[b]
                          for b in token.encode("utf-8", errors="surrogateescape"))
        ids.extend(encoder[s] for s in bpe(symbols, ranks))
    return ids


TEXTS = [
    "a\u00a0b  \u3000c\u2003\u2003d \u00a0 e",
    "x\x1c\x1dy \x1f z",
    "line\u2028next\u0085end\u2029",
    "I'M He'S 'sa 're''ll they're x'd'll",
    "<|endoftext|>",
    "a<|endoftext|>b <|endoftext|> c",
    "\u0663\u0664 \u216b \u00bd x\u00b2 3rd 4th",
    "e\u0301t\u00e9 \u02b0a \u01c5z",
    "\n\n\nword  \t x \r\n\t",
    " ? !!  !! ,, 'x",
    "\U0001F469\u200d\U0001F4BB team\ufeff",
    "xyz" * 700,
    " the" * 300 + "  ",
]
RAW = [
    b"ab\xffcd \xe2\x82 z\x80\x80 \xed\xa0\x80 done\xc3",
    b"\xc0\xaf \xf4\x90\x80\x80 caf\xc3\xa9\xff's",
    bytes(range(256)),
]


def main():
    with open(os.path.join(DATA, "vocab.json"), encoding="utf-8") as f:
        encoder = json.load(f)
    with open(os.path.join(DATA, "merges.txt"), encoding="utf-8") as f:
        lines = f.read().split("\n")[1:-1]
    ranks = {tuple(line.split()): r for r, line in enumerate(lines)}
    cases = []
    for data in [t.encode("utf-8") for t in TEXTS] + RAW:
        cases.append({"hex": data.hex(), "ids": encode(data, encoder, ranks)})
    out = {"oracle": "openai/gpt-2 src/encoder.py's algorithm (tools/goldens/gpt2_tokenizer.py)",
           "cases": cases}
    with open(os.path.join(DATA, "tokenizer_extra_cases.json"), "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
