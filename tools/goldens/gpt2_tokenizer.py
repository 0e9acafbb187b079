"""GPT-2 tokenizer goldens beyond the fixture's cases (tests/data/hf_gpt2_tiny/).

The oracle is openai/gpt-2's src/encoder.py, its algorithm restated here
(bytes_to_unicode, the pre-tokenization pattern under Python's `regex`
module, merges by rank, every occurrence of the best pair in one pass), over
the fixture's vocab.json and merges.txt. The texts are the cases the
fixture does not reach: Unicode spaces and their neighbours, numbers and
letters of other scripts, marks, case-sensitive contractions, the special
token's text (which encoder.py does not special-case), long words, bytes
that are not UTF-8, and a seeded random mix of all of them. encoder.py
takes a Python str; a byte that is not UTF-8 is read with Python's
`surrogateescape` (a lone surrogate, category Cs: neither a letter, a number
nor a space) and written back as that byte.

Writes tests/data/hf_gpt2_tiny/tokenizer_extra_cases.json: each case's
bytes in hex and its ids. Needs the `regex` module (Debian: python3-regex).
"""

import json
import os
import random

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
SPACES = [0x9, 0xA, 0xB, 0xC, 0xD, 0x1C, 0x1F, 0x85, 0xA0, 0x1680, 0x2000, 0x200A, 0x2028,
          0x2029, 0x202F, 0x205F, 0x3000, 0x200B, 0x200D, 0xFEFF, 0x180E]
# Blocks of Unicode 6 or older, so that any Unicode version's categories agree.
BLOCKS = [(0xA1, 0x2FF), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
          (0x900, 0x97F), (0xE00, 0xE7F), (0x2150, 0x218F), (0x2460, 0x24FF), (0x3040, 0x30FF),
          (0x4E00, 0x4E80), (0xAC00, 0xAC80), (0x1F300, 0x1F64F), (0x1D400, 0x1D4FF)]


def mixed_text(seed, n):
    """n random pieces: ASCII, Unicode spaces, letters, marks and numbers of
    other scripts, symbols, contractions and bytes that are not UTF-8."""
    rng = random.Random(seed)
    palette = [chr(c) for c in list(range(0x20, 0x7F)) * 4 + SPACES]
    for lo, hi in BLOCKS:
        palette += [chr(c) for c in range(lo, hi) if not 0xD800 <= c < 0xE000]
    out = bytearray()
    for _ in range(n):
        r = rng.random()
        if r < 0.03:
            out += bytes([rng.randrange(0x80, 0x100)])
        elif r < 0.05:
            out += b"'" + rng.choice([b"s", b"t", b"re", b"ve", b"m", b"ll", b"d", b"S", b"x"])
        else:
            out += rng.choice(palette).encode("utf-8")
    return bytes(out)


RAW = [
    b"ab\xffcd \xe2\x82 z\x80\x80 \xed\xa0\x80 done\xc3",
    b"\xc0\xaf \xf4\x90\x80\x80 caf\xc3\xa9\xff's",
    bytes(range(256)),
    mixed_text(7, 4000),
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
