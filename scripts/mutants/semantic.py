"""Semantic operators: the faults a careless change makes that no single
token shows.

    SWP  StatementSwap    two adjacent statements of a block swapped
    MOV  ReleaseMoved     an unlock, a signal or a broadcast moved one
                          statement earlier or later (a swap with a release)
    PAIR PairHalfDeleted  a call whose result is used, to a function that has
                          a partner (charge/uncharge, lock/unlock, add/take,
                          ...), replaced by its success value: the acquiring
                          half is gone, the releasing half still runs
    RMW  AtomicSplit      an atomic exchange or read-modify-write done as a
                          load and a store
    OBO  LengthOffByOne   the length given to memset, memcpy, rt__clear, ...
                          one more and one less
    ARG  ArgumentSwap     two arguments of one call, of the same type, swapped
    FLD  SiblingField     a field read or written through its sibling of the
                          same type declared just before or after it

A call statement's deletion is DCL's (operators.py): deleting the releasing
half of a pair, or the acquiring half when it is a statement, is already
there; PAIR reaches the halves DCL cannot, those whose result is used.

Three of these need types: which arguments share one, which fields are
siblings of one type, what a call returns. They come from libclang's AST
(Debian's python3-clang-14), the tree the compiler itself builds from the
same headers and macros, with typedefs resolved to canonical types. clex
(operators.py) sees tokens only, and a C parser grown here would have to
redo the preprocessor, the headers and the typedefs to know that a size_t
and an `unsigned long` argument are one type. Without libclang the
operators are off, and the driver says so.

Parsing is of the release configuration (no RT_TESTING): only the code
that ships is mutated, never the test instrumentation."""
import re

from . import clex
from .operators import functions, records

NAMES = {
    "SWP": "StatementSwap", "MOV": "ReleaseMoved", "PAIR": "PairHalfDeleted",
    "RMW": "AtomicSplit", "OBO": "LengthOffByOne", "ARG": "ArgumentSwap",
    "FLD": "SiblingField",
}

RELEASE = re.compile(r"(unlock|signal|broadcast|release|post)$")
WAKE = re.compile(r"(signal|broadcast)$")
LOCK = re.compile(r"(?<!un)lock$")
UNLOCK = re.compile(r"unlock$")
# Making or unmaking an object: two of these on different objects commute.
LIFECYCLE = re.compile(r"_(init|destroy)$")
# The argument that is a length, by position.
LENGTH_ARG = {"memset": 2, "memcpy": 2, "memmove": 2, "memcmp": 2, "strncpy": 2,
              "strncmp": 2, "snprintf": 1, "vsnprintf": 1, "rt__clear": 1}
# (acquire, release) name endings; a release is looked for first, since
# "unlock" ends with "lock" too.
PAIRS = [("lock", "unlock"), ("charge", "uncharge"), ("ref", "unref"), ("open", "close"),
         ("take", "give"), ("add", "take"), ("push", "pop"), ("enter", "leave"),
         ("acquire", "release"), ("new", "delete")]
# Functions whose arguments commute: swapping them is no fault.
COMMUTATIVE = {"calloc", "pthread_equal"}
JUMPS = {"RETURN_STMT", "BREAK_STMT", "CONTINUE_STMT", "GOTO_STMT"}
NOT_SWAPPED = {"DECL_STMT", "LABEL_STMT", "CASE_STMT", "DEFAULT_STMT", "NULL_STMT"}

# Atomic read-modify-writes: name -> (kind, returns the new value, C11 form).
RMW_OPS = {}
for _op, _c in (("add", "+"), ("sub", "-"), ("or", "|"), ("and", "&"), ("xor", "^")):
    RMW_OPS[f"atomic_fetch_{_op}"] = (_c, False, "c11")
    RMW_OPS[f"atomic_fetch_{_op}_explicit"] = (_c, False, "c11x")
    RMW_OPS[f"__atomic_fetch_{_op}"] = (_c, False, "gnu")
    RMW_OPS[f"__atomic_{_op}_fetch"] = (_c, True, "gnu")
RMW_OPS["atomic_exchange"] = ("=", False, "c11")
RMW_OPS["atomic_exchange_explicit"] = ("=", False, "c11x")
RMW_OPS["__atomic_exchange_n"] = ("=", False, "gnu")
# The orders a split keeps: the load takes the acquire half, the store the
# release half.
SPLIT = {
    "memory_order_relaxed": ("memory_order_relaxed", "memory_order_relaxed"),
    "memory_order_consume": ("memory_order_consume", "memory_order_relaxed"),
    "memory_order_acquire": ("memory_order_acquire", "memory_order_relaxed"),
    "memory_order_release": ("memory_order_relaxed", "memory_order_release"),
    "memory_order_acq_rel": ("memory_order_acquire", "memory_order_release"),
    "memory_order_seq_cst": ("memory_order_seq_cst", "memory_order_seq_cst"),
    "__ATOMIC_RELAXED": ("__ATOMIC_RELAXED", "__ATOMIC_RELAXED"),
    "__ATOMIC_CONSUME": ("__ATOMIC_CONSUME", "__ATOMIC_RELAXED"),
    "__ATOMIC_ACQUIRE": ("__ATOMIC_ACQUIRE", "__ATOMIC_RELAXED"),
    "__ATOMIC_RELEASE": ("__ATOMIC_RELAXED", "__ATOMIC_RELEASE"),
    "__ATOMIC_ACQ_REL": ("__ATOMIC_ACQUIRE", "__ATOMIC_RELEASE"),
    "__ATOMIC_SEQ_CST": ("__ATOMIC_SEQ_CST", "__ATOMIC_SEQ_CST"),
}


def unavailable():
    """None when libclang can be used, else why not (one line)."""
    try:
        import clang.cindex as ci
        ci.Index.create()
    except Exception as e:  # ImportError, or libclang's shared library missing
        return (f"python3-clang-14 is not usable ({type(e).__name__}: {e}); "
                "scripts/deps mutants installs it")
    return None


def mutants(path, text, include_dirs, defines=()):
    """The semantic mutants of one C file (path relative to the tree), parsed
    with the include folders given (absolute paths)."""
    return records(path, text, sites(path, text, include_dirs, defines), NAMES)


def sites(path, text, include_dirs, defines=()):
    """[(op, function, start, end, replacement)] of one file."""
    import clang.cindex as ci
    args = ["-std=c11", "-D_GNU_SOURCE"] + [f"-D{d}" for d in defines] + \
        [f"-I{d}" for d in include_dirs]
    tu = ci.Index.create().parse(path, args=args, unsaved_files=[(path, text)],
                                 options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
    src = _Source(path, text)
    declared = {c.spelling for c in tu.cursor.walk_preorder()
                if c.kind == ci.CursorKind.FUNCTION_DECL}
    found = []
    for fn in tu.cursor.get_children():
        if (fn.kind != ci.CursorKind.FUNCTION_DECL or not fn.is_definition()
                or not src.mine(fn)):
            continue
        _walk(fn, fn.spelling, src, declared, found)
    found += _rmw_sites(text)
    # One edit a place and replacement: an operator that repeats another's
    # edit (a MOV is also a swap) keeps the first.
    seen, out = set(), []
    for s in found:
        if (s[2], s[3], s[4]) not in seen:
            seen.add((s[2], s[3], s[4]))
            out.append(s)
    return out


class _Source:
    """The file's text, and libclang's byte offsets turned into indices of it."""

    def __init__(self, path, text):
        self.path, self.text = path, text
        raw = text.encode()
        if len(raw) == len(text):
            self.index = None
        else:
            self.index = []
            for i, ch in enumerate(text):
                self.index += [i] * len(ch.encode())
            self.index.append(len(text))

    def mine(self, cur):
        f = cur.location.file
        return f is not None and f.name == self.path

    def span(self, cur):
        """(start, end) of the cursor in the text, None when it is not all
        in this file (a macro's expansion, a header)."""
        e = cur.extent
        if e.start.file is None or e.end.file is None or \
                e.start.file.name != self.path or e.end.file.name != self.path:
            return None
        a, b = e.start.offset, e.end.offset
        if self.index is not None:
            a, b = self.index[a], self.index[b]
        return (a, b) if a < b else None

    def statement(self, cur):
        """The statement's span with its ';' (libclang's extent of an
        expression or a return stops before it)."""
        s = self.span(cur)
        if s is None:
            return None
        a, b = s
        j = b
        while j < len(self.text) and self.text[j] in " \t":
            j += 1
        if j < len(self.text) and self.text[j] == ";":
            b = j + 1
        return a, b


def _kind(cur):
    return cur.kind.name


def _walk(fn, name, src, declared, found):
    def visit(cur, parent, lifecycle):
        k = _kind(cur)
        if k == "COMPOUND_STMT":
            _swaps(list(cur.get_children()), name, src, found)
        elif k == "CALL_EXPR":
            _call(cur, parent, name, src, declared, found)
            # an object made or unmade in place of its sibling of one type
            # (two condition variables) is the same object on glibc: skipped
            lifecycle = lifecycle or LIFECYCLE.search(cur.spelling) is not None
        elif k == "MEMBER_REF_EXPR" and not lifecycle:
            _field(cur, name, src, found)
        for child in cur.get_children():
            visit(child, cur, lifecycle)
    visit(fn, None, False)


def _names_and_calls(cur, src):
    names, calls = set(), False
    for c in cur.walk_preorder():
        k = _kind(c)
        if k in ("DECL_REF_EXPR", "MEMBER_REF_EXPR"):
            names.add(c.spelling)
        elif k in ("CALL_EXPR", "ASM_STMT") or k in JUMPS:
            calls = True
    s = src.span(cur)
    # Atomics are builtins, not CALL_EXPR; asm, volatile and atomics order.
    if s is None or re.search(r"atomic|volatile|asm", src.text[s[0]:s[1]]):
        calls = True
    return names, calls


RELAXED = re.compile(r"^(__ATOMIC_RELAXED|memory_order_relaxed)$")
ORDER = re.compile(r"\b(__ATOMIC_[A-Z_]+|memory_order_[a-z_]+)\b")
ATOMIC_OP = re.compile(r"\b(__atomic_\w+|__c11_atomic_\w+|atomic_\w+)\s*\(")


def _relaxed_only(cur, src):
    """Whether a statement's only ordering is relaxed atomics: at least one
    atomic builtin (which libclang shows as no call), every memory order it
    names relaxed, no call, asm, jump or volatile."""
    s = src.span(cur)
    if s is None:
        return False
    text = src.text[s[0]:s[1]]
    orders = ORDER.findall(text)
    if not ATOMIC_OP.search(text) or not orders or \
            not all(RELAXED.match(o) for o in orders) or re.search(r"volatile|asm", text):
        return False
    return not any(_kind(c) in ("CALL_EXPR", "ASM_STMT") or _kind(c) in JUMPS
                   for c in cur.walk_preorder())


def _unordered_names(names):
    """The names of a statement that are objects (not a memory order's)."""
    return {n for n in names if not ORDER.fullmatch(n)}


def _call_name(cur):
    """The function a statement calls, '' when it is no call statement."""
    return cur.spelling if _kind(cur) == "CALL_EXPR" else ""


def _commute(s1, s2, before, src):
    """Whether swapping s1 and s2 is no fault by construction:
    - no call, no atomic, and no name in common;
    - two wake-ups or releases (unlock then signal, or signal then unlock:
      a waiter re-checks its condition under the lock either way);
    - a wake-up and a statement inside the critical section of a lock the
      block took before them: nobody it wakes runs before the unlock;
    - two inits or destroys of different objects;
    - two stores to different fields, with no call, no atomic and no
      volatile, neither reading the field the other writes nor any memory
      but through fields: the compiler may put them in either order itself;
    - a relaxed atomic and a statement that names nothing it names, neither
      with a call, asm, volatile or any stronger order: a relaxed operation
      orders nothing, so the compiler may move it past the other statement
      itself, and another thread may see the two in either order already."""
    n1, c1 = _names_and_calls(s1, src)
    n2, c2 = _names_and_calls(s2, src)
    if not c1 and not c2 and n1.isdisjoint(n2):
        return True
    r1, r2 = _relaxed_only(s1, src), _relaxed_only(s2, src)
    if (r1 or r2) and (r1 or not c1) and (r2 or not c2) and \
            _unordered_names(n1).isdisjoint(_unordered_names(n2)):
        return True
    f1, f2 = _call_name(s1), _call_name(s2)
    if RELEASE.search(f1 or "-") and RELEASE.search(f2 or "-"):
        return True
    if (WAKE.search(f1 or "-") or WAKE.search(f2 or "-")) and \
            not UNLOCK.search(f1) and not UNLOCK.search(f2) and _locked(before):
        return True
    if LIFECYCLE.search(f1) and LIFECYCLE.search(f2):
        o1, o2 = _first_argument(s1, src), _first_argument(s2, src)
        if o1 is not None and o2 is not None and o1 != o2:
            return True
    if not c1 and not c2:
        w1, w2 = _field_stores(s1, src), _field_stores(s2, src)
        if w1 and w2 and w1.isdisjoint(_fields_named(s2)) and \
                w2.isdisjoint(_fields_named(s1)):
            return True
    return False


def _first_argument(call, src):
    """The text of a call's first argument, also when the call comes from a
    macro (rt__mutex_destroy(&c->lock) is pthread_mutex_destroy(&c->lock),
    whose argument libclang places at the macro's name, or over the whole
    macro): then it is the macro's own first argument, read from the text."""
    args = list(call.get_arguments())
    s = src.span(call)
    if not args or s is None:
        return None
    text = src.text[s[0]:s[1]]
    if text.startswith(call.spelling):
        a = src.span(args[0])
        return src.text[a[0]:a[1]].strip() if a is not None else None
    m = re.match(r"\s*[A-Za-z_]\w*\s*\(", text)
    if m is None:
        return None
    depth, start = 1, m.end()
    for j in range(start, len(text)):
        ch = text[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return text[start:j].strip()
        elif ch == "," and depth == 1:
            return text[start:j].strip()
    return None


ASSIGN = re.compile(r"(=|\+=|-=|\*=|/=|%=|&=|\|=|\^=|<<=|>>=)")


def _store_target(e, src):
    """The place an expression stores to when it is an assignment (=, +=,
    ...) or a ++ or --, else None."""
    k = _kind(e)
    kids = list(e.get_children())
    if k in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and len(kids) == 2:
        s0, s1 = src.span(kids[0]), src.span(kids[1])
        if s0 is not None and s1 is not None and \
                ASSIGN.fullmatch(src.text[s0[1]:s1[0]].strip()):
            return kids[0]
    elif k == "UNARY_OPERATOR" and len(kids) == 1:
        s, s0 = src.span(e), src.span(kids[0])
        if s is not None and s0 is not None and \
                (src.text[s[0]:s0[0]] + src.text[s0[1]:s[1]]).strip() in ("++", "--"):
            return kids[0]
    return None


def _field_path(e):
    """Whether e names a field reached from a variable by `->`, `.` and
    literal indices of array fields alone (p->a, it.value, d->copy[0].p),
    through no union, atomic or volatile."""
    while _kind(e) in ("UNEXPOSED_EXPR", "PAREN_EXPR") and len(list(e.get_children())) == 1:
        e = list(e.get_children())[0]
    k = _kind(e)
    if k == "DECL_REF_EXPR":
        return True
    if k == "MEMBER_REF_EXPR":
        f = e.referenced
        t = e.type.get_canonical().spelling
        if f is None or _kind(f) != "FIELD_DECL" or _kind(f.semantic_parent) != "STRUCT_DECL" \
                or "_Atomic" in t or "volatile" in t:
            return False
        kids = list(e.get_children())
        return len(kids) == 1 and _field_path(kids[0])
    if k == "ARRAY_SUBSCRIPT_EXPR":
        base, index = list(e.get_children())
        while _kind(base) == "UNEXPOSED_EXPR" and len(list(base.get_children())) == 1:
            base = list(base.get_children())[0]
        return _kind(base) == "MEMBER_REF_EXPR" and \
            base.type.get_canonical().kind.name == "CONSTANTARRAY" and \
            _kind(index) == "INTEGER_LITERAL" and _field_path(base)
    return False


def _field_stores(st, src):
    """The fields a statement stores to, when it is only stores to fields:
    an assignment (or ++, --) to a field path (_field_path), whose every
    other store is to a field path too and whose every read is of a field
    path or a variable (no `*`, no `&`, no other `[]`); else None."""
    if _store_target(st, src) is None:
        return None
    written = set()
    for c in st.walk_preorder():
        ck = _kind(c)
        if ck in ("CALL_EXPR", "ASM_STMT"):
            return None
        t = _store_target(c, src)
        if t is not None:
            while _kind(t) in ("UNEXPOSED_EXPR", "PAREN_EXPR", "ARRAY_SUBSCRIPT_EXPR") and \
                    _field_path(t) and list(t.get_children()):
                t = list(t.get_children())[0]
            if _kind(t) != "MEMBER_REF_EXPR" or not _field_path(t):
                return None
            written.add(t.spelling)
        elif ck == "UNARY_OPERATOR":
            s = src.span(c)
            if s is None or src.text[s[0]:s[1]].lstrip().startswith(("*", "&")):
                return None
        elif ck in ("MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR") and not _field_path(c):
            return None
    return written


def _fields_named(st):
    return {c.spelling for c in st.walk_preorder() if _kind(c) == "MEMBER_REF_EXPR"}


def _locked(before):
    """Whether the statements before, in one block, leave a lock taken."""
    held = 0
    for st in before:
        f = _call_name(st)
        if LOCK.search(f):
            held += 1
        elif UNLOCK.search(f):
            held = max(0, held - 1)
    return held > 0


def _swaps(stmts, fn, src, found):
    for i, (s1, s2) in enumerate(zip(stmts, stmts[1:])):
        # a jump swapped with what comes before it deletes that statement on
        # this path, which DCL does already
        if _kind(s1) in NOT_SWAPPED | JUMPS or _kind(s2) in NOT_SWAPPED | JUMPS:
            continue
        p1, p2 = src.statement(s1), src.statement(s2)
        if p1 is None or p2 is None or p1[1] > p2[0]:
            continue
        whole = src.text[p1[0]:p2[1]]
        if re.search(r"^\s*#", whole, re.M):
            continue  # a preprocessor line between or inside: not one block
        if _commute(s1, s2, stmts[:i], src):
            continue
        f1, f2 = _call_name(s1), _call_name(s2)
        op = "MOV" if RELEASE.search(f1 or "-") or RELEASE.search(f2 or "-") else "SWP"
        t = src.text
        repl = t[p2[0]:p2[1]] + t[p1[1]:p2[0]] + t[p1[0]:p1[1]]
        found.append((op, fn, p1[0], p2[1], repl))


def _partner(name, declared):
    for acquire, release in PAIRS:
        for mine, other in ((release, acquire), (acquire, release)):
            if name.endswith(mine):
                partner = name[:len(name) - len(mine)] + other
                if partner in declared:
                    return partner
    return None


def _call(cur, parent, fn, src, declared, found):
    s = src.span(cur)
    if s is None or not src.text.startswith(cur.spelling, s[0]) or not cur.spelling:
        return
    args = list(cur.get_arguments())
    spans = [src.span(a) for a in args]
    # PAIR: the result is used (the call is no statement of a block).
    if parent is not None and _kind(parent) != "COMPOUND_STMT" and \
            _partner(cur.spelling, declared) is not None:
        kind = cur.type.get_canonical().kind.name
        success = {"BOOL": "true"}.get(kind, "0" if kind in (
            "INT", "UINT", "LONG", "ULONG", "LONGLONG", "ULONGLONG") else None)
        if success is not None:
            found.append(("PAIR", fn, s[0], s[1], success))
    # OBO: the length argument.
    at = LENGTH_ARG.get(cur.spelling)
    if at is not None and at < len(spans) and spans[at] is not None:
        a, b = spans[at]
        arg = src.text[a:b]
        for d in ("+ 1", "- 1"):
            found.append(("OBO", fn, a, b, f"({arg}) {d}"))
    # ARG: two arguments of one type.
    for i in range(len(args) if cur.spelling not in COMMUTATIVE else 0):
        for j in range(i + 1, len(args)):
            if spans[i] is None or spans[j] is None or spans[i][1] > spans[j][0]:
                continue
            if _type_as_written(args[i]) != _type_as_written(args[j]):
                continue
            ti, tj = src.text[spans[i][0]:spans[i][1]], src.text[spans[j][0]:spans[j][1]]
            if ti == tj or (_literal(ti) and _literal(tj)):
                continue
            between = src.text[spans[i][1]:spans[j][0]]
            found.append(("ARG", fn, spans[i][0], spans[j][1], tj + between + ti))


def _type_as_written(arg):
    """The canonical type of an argument before the call's implicit
    conversions (memcpy's two pointers are both void * after them)."""
    while _kind(arg) == "UNEXPOSED_EXPR":
        inner = list(arg.get_children())
        if len(inner) != 1:
            break
        arg = inner[0]
    return arg.type.get_canonical().spelling


def _literal(text):
    return re.fullmatch(r"\s*(-?[0-9][0-9a-fA-FxXuUlL]*|'.*'|\".*\"|NULL|true|false)\s*",
                        text) is not None


def _field(cur, fn, src, found):
    s = src.span(cur)
    f = cur.referenced
    if s is None or f is None or _kind(f) != "FIELD_DECL" or \
            not src.text.endswith(f.spelling, 0, s[1]) or f.is_bitfield():
        return
    fields = [x for x in f.semantic_parent.get_children()
              if _kind(x) == "FIELD_DECL" and not x.is_bitfield()]
    same = [x.spelling for x in fields
            if x.type.get_canonical().spelling == f.type.get_canonical().spelling]
    at = same.index(f.spelling) if f.spelling in same else -1
    if at < 0:
        return
    end = s[1]
    start = end - len(f.spelling)
    for k in (at - 1, at + 1):
        if 0 <= k < len(same):
            found.append(("FLD", fn, start, end, same[k]))


def _args(tokens, open_at):
    """The top-level argument token ranges [(first, last)] of the call whose
    '(' is tokens[open_at], and the index of its ')'."""
    depth, first, out = 0, open_at + 1, []
    for j in range(open_at, len(tokens)):
        t = tokens[j].text
        if t in ("(", "[", "{"):
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                out.append((first, j - 1))
                return out, j
        elif t == "," and depth == 1:
            out.append((first, j - 1))
            first = j + 1
    return out, len(tokens) - 1


def _rmw_sites(text):
    """RMW: atomic read-modify-writes and exchanges, found by their names
    (they are builtins, no CALL_EXPR in the AST)."""
    tokens = clex.tokenize(text)
    out = []
    for fn, first, last in functions(tokens):
        for i in range(first, last):
            t = tokens[i]
            if t.kind != clex.IDENT or t.text not in RMW_OPS or tokens[i + 1].text != "(":
                continue
            combine, new_value, form = RMW_OPS[t.text]
            args, close = _args(tokens, i + 1)
            arg = [text[tokens[a].start:tokens[b].end] for a, b in args]
            want = {"c11": 2, "c11x": 3, "gnu": 3}[form]
            if len(arg) != want:
                continue
            p, v = arg[0], arg[1]
            if form == "c11":
                load, store = f"atomic_load({p})", f"atomic_store({p}, {{x}})"
                typ = f"__typeof__(atomic_load({p}))"
            else:
                if arg[2].strip() not in SPLIT:
                    continue
                lo, so = SPLIT[arg[2].strip()]
                if form == "c11x":
                    load = f"atomic_load_explicit({p}, {lo})"
                    store = f"atomic_store_explicit({p}, {{x}}, {so})"
                    typ = f"__typeof__(atomic_load_explicit({p}, {lo}))"
                else:
                    load = f"__atomic_load_n({p}, {lo})"
                    store = f"__atomic_store_n({p}, {{x}}, {so})"
                    typ = f"__typeof__(*({p}))"
            stored = f"({v})" if combine == "=" else f"rt__old {combine} ({v})"
            result = f"rt__old {combine} ({v})" if new_value else "rt__old"
            repl = (f"({{ {typ} rt__old = {load}; {store.format(x=stored)}; "
                    f"{result}; }})")
            out.append(("RMW", fn, t.start, tokens[close].end, repl))
    return out
