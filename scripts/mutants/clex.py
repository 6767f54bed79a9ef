"""A C tokenizer, enough to find mutation sites.

Comments and preprocessor lines are skipped (never mutated); string and
character literals are single tokens (never looked into). Each token keeps
its offsets in the text, so a mutant is an exact edit of the source."""
import re
from dataclasses import dataclass

IDENT, NUMBER, STRING, CHAR, PUNCT = "ident", "number", "string", "char", "punct"

_PUNCTS = sorted("""
    ... <<= >>= -> ++ -- << >> <= >= == != && || += -= *= /= %= &= ^= |= ##
    [ ] ( ) { } . & * + - ~ ! / % < > ^ | ? : ; = , #
""".split(), key=len, reverse=True)

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>[LuU8]*"(?:\\.|[^"\\\n])*")
  | (?P<char>[LuU]?'(?:\\.|[^'\\\n])*')
  | (?P<number>\.?[0-9](?:[eEpP][+-]|[0-9a-zA-Z_.])*)
  | (?P<ident>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<punct>""" + "|".join(re.escape(p) for p in _PUNCTS) + r""")
""", re.S | re.X)


@dataclass
class Token:
    kind: str
    text: str
    start: int
    end: int
    line: int


class LexError(Exception):
    pass


def tokenize(text):
    """The tokens of text, without comments, whitespace and preprocessor lines."""
    tokens, at, line, line_start = [], 0, 1, True
    while at < len(text):
        if line_start:
            # A directive: '#' first on its line; it runs to an unescaped newline.
            m = re.match(r"[ \t]*#", text[at:at + 200])
            if m:
                end = at
                while True:
                    nl = text.find("\n", end)
                    if nl < 0:
                        end = len(text)
                        break
                    # a comment may hide the newline; keep it simple: continuation only
                    if text[nl - 1] == "\\":
                        end = nl + 1
                        continue
                    end = nl
                    break
                line += text.count("\n", at, end)
                at = end
                continue
        m = _TOKEN.match(text, at)
        if not m:
            raise LexError(f"line {line}: cannot read {text[at:at + 20]!r}")
        kind = m.lastgroup
        value = m.group()
        newlines = value.count("\n")
        if kind not in ("ws", "comment"):
            tokens.append(Token(kind, value, at, m.end(), line))
            line_start = False
        elif newlines:
            line_start = True
        line += newlines
        at = m.end()
    return tokens
