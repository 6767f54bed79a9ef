"""Generated mutants: operators applied to C source, site by site.

Every site is a token (or a run of tokens) inside a function body, found by
clex, so nothing inside a comment, a string or a preprocessor line is ever
mutated. Each operator yields (start, end, replacement) edits of the text;
mutants() turns them into Mutant records with ids that survive unrelated
edits (file, function, operator and a hash of the site's own line)."""
import hashlib
import re

from . import clex
from .model import GENERATED, Edit, Mutant, location_of

RELATIONAL = {"<": ["<=", ">="], "<=": ["<", ">"], ">": [">=", "<="], ">=": [">", "<"],
              "==": ["!="], "!=": ["=="]}
ARITHMETIC = {"+": ["-"], "-": ["+"], "*": ["/"], "/": ["*"], "%": ["*"],
              "++": ["--"], "--": ["++"], "+=": ["-="], "-=": ["+="],
              "<<": [">>"], ">>": ["<<"]}
LOGICAL = {"&&": ["||"], "||": ["&&"]}
VOLATILE = {"volatile", "__volatile__", "__volatile"}
MEMORY_ORDERS = {
    "memory_order_seq_cst": ["memory_order_acq_rel", "memory_order_relaxed"],
    "memory_order_acq_rel": ["memory_order_acquire", "memory_order_release",
                             "memory_order_relaxed"],
    "memory_order_acquire": ["memory_order_relaxed"],
    "memory_order_release": ["memory_order_relaxed"],
    "memory_order_consume": ["memory_order_relaxed"],
    "__ATOMIC_SEQ_CST": ["__ATOMIC_ACQ_REL", "__ATOMIC_RELAXED"],
    "__ATOMIC_ACQ_REL": ["__ATOMIC_ACQUIRE", "__ATOMIC_RELEASE", "__ATOMIC_RELAXED"],
    "__ATOMIC_ACQUIRE": ["__ATOMIC_RELAXED"],
    "__ATOMIC_RELEASE": ["__ATOMIC_RELAXED"],
}
TYPE_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed",
              "unsigned", "_Bool", "bool", "struct", "union", "enum", "const", "static",
              "extern", "register", "volatile", "inline", "_Noreturn", "_Atomic", "typedef",
              "auto", "_Thread_local"}
NOT_STATEMENTS = {"return", "break", "continue", "goto", "if", "while", "for", "do",
                  "switch", "case", "default", "else", "sizeof"}
VALUE_END = {clex.IDENT, clex.NUMBER, clex.STRING, clex.CHAR}

# The short names in ids, and the mutatorName in the report.
NAMES = {
    "ROR": "RelationalOperator", "AOR": "ArithmeticOperator", "LCR": "LogicalConnector",
    "CRP": "ConstantReplacement", "NEG": "NegatedCondition", "DCL": "CallDeletion",
    "DST": "StatementDeletion", "RET": "ReturnValue", "VOL": "VolatileDropped",
    "ATM": "MemoryOrderWeakened",
}


def _is_type_name(tok):
    return tok.kind == clex.IDENT and (tok.text in TYPE_WORDS or tok.text.endswith("_t"))


def _binary(tokens, i):
    """Whether tokens[i] (an operator that can also be unary) is binary."""
    if i == 0:
        return False
    prev = tokens[i - 1]
    if prev.text in (")", "]"):
        return True
    if prev.kind not in VALUE_END or prev.text in NOT_STATEMENTS or _is_type_name(prev):
        return False
    if tokens[i].text == "*" and i >= 2 and tokens[i - 2].text in ("struct", "union", "enum"):
        return False
    return True


def _match(tokens, i):
    """The index of the bracket that closes tokens[i]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    want, depth = pairs[tokens[i].text], 0
    for j in range(i, len(tokens)):
        if tokens[j].text == tokens[i].text:
            depth += 1
        elif tokens[j].text == want:
            depth -= 1
            if depth == 0:
                return j
    return len(tokens) - 1


def functions(tokens):
    """(name, first, last) token index ranges of each function body."""
    out, i = [], 0
    while i < len(tokens):
        t = tokens[i]
        if t.text == "{":
            close = _match(tokens, i)
            if i > 0 and tokens[i - 1].text == ")":
                j = i - 1
                # walk back over the parameter list to the function's name
                depth = 0
                while j >= 0:
                    if tokens[j].text == ")":
                        depth += 1
                    elif tokens[j].text == "(":
                        depth -= 1
                        if depth == 0:
                            break
                    j -= 1
                name = tokens[j - 1].text if j > 0 else "?"
                out.append((name, i + 1, close))
            i = close + 1
        else:
            i += 1
    return out


def _statements(tokens, first, last):
    """(start, end) token ranges [start, end] of statements ending in ';' that
    start a statement (after '{', '}', ';', 'else', ':' of a label or the ')'
    of an if/while/for header)."""
    starts = set()
    for i in range(first, last):
        t = tokens[i]
        if t.text in ("{", "}", ";", "else") or (t.text == ":" and i >= 2 and
                                                 tokens[i - 2].text in (";", "{", "}")):
            starts.add(i + 1)
        if t.text in ("if", "while", "for", "switch") and i + 1 < last and tokens[i + 1].text == "(":
            starts.add(_match(tokens, i + 1) + 1)
    starts.add(first)
    out = []
    for s in sorted(starts):
        if s >= last:
            continue
        depth, j = 0, s
        while j < last:
            x = tokens[j].text
            if x in ("(", "["):
                depth += 1
            elif x in (")", "]"):
                depth -= 1
            elif x in ("{", "}") and depth == 0:
                break
            elif x == ";" and depth == 0:
                out.append((s, j))
                break
            j += 1
    # the header of a for loop is not a statement list
    return [r for r in out if not (r[0] > 0 and tokens[r[0] - 1].text == "(")]


def _declaration(toks):
    if _is_type_name(toks[0]):
        return True
    if len(toks) >= 2 and toks[0].kind == clex.IDENT and toks[1].kind == clex.IDENT:
        return True
    return (len(toks) >= 3 and toks[0].kind == clex.IDENT and toks[1].text == "*"
            and toks[2].kind == clex.IDENT and len(toks) >= 4 and toks[3].text in "=;,[")


def sites(text):
    """Every generated edit of one C file:
    [(operator, function, start, end, replacement)]."""
    tokens = clex.tokenize(text)
    found = []

    def add(op, fn, start, end, repl):
        found.append((op, fn, start, end, repl))

    for fn, first, last in functions(tokens):
        for i in range(first, last):
            t = tokens[i]
            if t.kind == clex.PUNCT:
                if t.text in RELATIONAL:
                    for r in RELATIONAL[t.text]:
                        add("ROR", fn, t.start, t.end, r)
                elif t.text in LOGICAL:
                    for r in LOGICAL[t.text]:
                        add("LCR", fn, t.start, t.end, r)
                elif t.text in ("++", "--", "+=", "-="):
                    for r in ARITHMETIC[t.text]:
                        add("AOR", fn, t.start, t.end, r)
                elif t.text in ARITHMETIC and _binary(tokens, i):
                    for r in ARITHMETIC[t.text]:
                        add("AOR", fn, t.start, t.end, r)
            elif t.kind == clex.NUMBER:
                m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|[0-9]+)([uUlL]*)", t.text)
                if not m or (i > 0 and tokens[i - 1].text == "-"):
                    continue
                value, suffix = int(m.group(1), 0), m.group(2)
                for v in sorted({0, value + 1, value - 1} - {value}):
                    if v >= 0:
                        add("CRP", fn, t.start, t.end, f"{v}{suffix}")
            elif t.kind == clex.IDENT:
                if t.text in VOLATILE:
                    end = tokens[i + 1].start if i + 1 < len(tokens) else t.end
                    add("VOL", fn, t.start, end, "")
                elif t.text in MEMORY_ORDERS:
                    for r in MEMORY_ORDERS[t.text]:
                        add("ATM", fn, t.start, t.end, r)
                elif t.text in ("if", "while") and tokens[i + 1].text == "(":
                    close = _match(tokens, i + 1)
                    cond = text[tokens[i + 1].start:tokens[close].end]
                    add("NEG", fn, tokens[i + 1].start, tokens[close].end, f"(!{cond})")
        for s, e in _statements(tokens, first, last):
            toks = tokens[s:e]
            if not toks:
                continue
            head = toks[0].text
            if head == "return":
                value = " ".join(x.text for x in toks[1:])
                if not value or value in ("NULL", "(void *)0"):
                    continue
                repl = {"0": "1", "false": "true", "true": "false"}.get(value, "0")
                add("RET", fn, toks[1].start, toks[-1].end, repl)
                continue
            if head in NOT_STATEMENTS or _declaration(toks):
                continue
            call = (toks[0].kind == clex.IDENT and len(toks) >= 3 and toks[1].text == "("
                    and _match(tokens, s + 1) == e - 1)
            add("DCL" if call else "DST", fn, toks[0].start, tokens[e].end, "(void)0;")
    return found


# What only a test build compiles (the configuration's sources.test_only:
# in this tree RT_TESTING, the Makefile's every build but RELEASE=1, and
# its statements: the lock checks, the cost counters, the named points).
# It is test code, judged by its own tests (check_locks: the checker fires
# on each fault), not runtime: a mutant of it would be judged against the
# release build by TCE and called equivalent, which it is not. So it is
# not mutated.
def test_only_spans(text, define=None, statements=()):
    """[(start, end)] of the text only test builds compile: an #if branch
    whose condition names define (to its #else, #elif or #endif), and a
    line that is one statement of a macro named in statements (RT_POINT,
    RT_COST, ...). With neither, none."""
    spans, stack, at = [], [], 0
    if not define and not statements:
        return spans
    for line in text.splitlines(True):
        d = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", line)
        if d:
            word, cond = d.group(1), d.group(2)
            if word in ("if", "ifdef", "ifndef"):
                testing = (bool(define) and word != "ifndef" and define in cond
                           and "!" not in cond)
                stack.append(at + len(line) if testing else None)
            elif stack:
                if stack[-1] is not None:
                    spans.append((stack[-1], at))
                if word == "endif":
                    stack.pop()
                else:
                    stack[-1] = None  # the #else branch is what releases build
        at += len(line)
    if statements:
        rx = re.compile(r"^\s*(" + "|".join(map(re.escape, statements)) + r")\s*\(.*\);\s*$",
                        re.M)
        spans += [(m.start(), m.end()) for m in rx.finditer(text)]
    return sorted(spans)


def in_test_only_code(m, spans):
    """Whether a mutant's edit touches code only test builds compile."""
    return any(e.start < b and a < e.end for e in m.edits for a, b in spans.get(e.path, ()))


def mutants(path, text):
    """The generated mutants of one file (path relative to the tree)."""
    return records(path, text, sites(text), NAMES)


def records(path, text, found, names):
    """Mutant records of one file from its sites [(op, function, start, end,
    replacement)]: the id hashes the site's own line, its place in the line
    and the replacement, so it survives edits elsewhere in the file."""
    stem = path.rsplit("/", 1)[-1]
    out, seen = [], {}
    lines = text.splitlines()
    for op, fn, start, end, repl in found:
        loc = location_of(text, start, end)
        line_text = lines[loc.line - 1].strip() if loc.line <= len(lines) else ""
        col_in_line = start - (text.rfind("\n", 0, start) + 1) - \
            (len(lines[loc.line - 1]) - len(lines[loc.line - 1].lstrip()))
        basis = f"{op}|{fn}|{line_text}|{col_in_line}|{repl}"
        n = seen.get(basis, 0)
        seen[basis] = n + 1
        digest = hashlib.sha256(f"{basis}|{n}".encode()).hexdigest()[:8]
        original = text[start:end]
        shown = repl if len(repl) < 60 else repl[:50] + "..."
        about = (f"{names[op]}: {original!r} -> {shown!r}" if len(original) < 60
                 else f"{names[op]}: {original[:50]!r}... -> {shown!r}")
        out.append(Mutant(id=f"{stem}:{fn}:{op}:{digest}", origin=GENERATED,
                          operator=names[op], about=about,
                          edits=[Edit(path, start, end, repl)], location=loc,
                          original=original))
    return out
