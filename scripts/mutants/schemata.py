"""Mutant schemata: many mutants of a file compiled into one build.

Building each mutant on its own costs a compile and every link; a schema
costs one build for all. For each function with mutants, each mutant gets
a static copy of the function with its edit applied, and the original
dispatches on entry:

    switch (rt__schemata_id()) { case 7: return f__m7(a, b); default: break; }

rt__schemata_id() reads the environment (RT_MUTANT) on its first call, so
with it unset the build is the original.

A call cannot always be forwarded: a variadic function cannot pass its
`...` on, a _Noreturn one would return from its dispatch, and a parameter
this parser cannot name (a function pointer, an unnamed one) cannot be
passed. Such a function keeps each mutant's body inside its own, as a
block under the dispatch:

    switch (rt__schemata_id()) { case 7: { <mutated body> } return; default: break; }

(`break;` in place of `return;` for a function that returns a value).

so va_start, the _Noreturn promise and every parameter are the function's
own. Labels are function-wide, so a body with a goto is left out: its
mutants are built one at a time. A mutant that survives in the schema is
built on its own before it is called a survivor (runner.py)."""
import re

from . import clex
from .operators import _match

SPECIFIERS = {"static", "inline", "extern", "_Noreturn", "__inline", "__inline__"}

# The number is read on the first call that asks, not by a constructor of
# the schema's own: a constructor of the tree's that runs first (hot.c's
# hot_start, at priority 101) would otherwise run as the original in every
# copy, and its mutants would pass the schema and be built alone, 100 s
# each (2 Dec 2026). Threads that race to read it store the same number
# (relaxed atomics: no data race for TSan's schema builds to report).
PRELUDE = """
/* mutant schemata (scripts/mutants/schemata.py): RT_MUTANT picks one.
   Compiled with RT_SCHEMATA_NONE, all that the schema adds is left out:
   the compiler then shows the rest is the original (cli.schema_proof). */
#ifndef RT_SCHEMATA_NONE
extern char *getenv(const char *);
static int rt__schemata_number = -1;
static inline int rt__schemata_id(void)
{
    int n = __atomic_load_n(&rt__schemata_number, __ATOMIC_RELAXED);
    if (n < 0) {
        const char *s = getenv("RT_MUTANT");
        n = 0;
        while (s != 0 && *s >= '0' && *s <= '9')
            n = n * 10 + (*s++ - '0');
        __atomic_store_n(&rt__schemata_number, n, __ATOMIC_RELAXED);
    }
    return n;
}
#endif
"""


# Defined, every part a schema adds is left out (PRELUDE)
NONE = "RT_SCHEMATA_NONE"


class Function:
    def __init__(self, tokens, brace, text):
        self.tokens = tokens
        self.brace = brace
        self.close = _match(tokens, brace)
        popen = brace - 1
        depth = 0
        while popen >= 0:
            if tokens[popen].text == ")":
                depth += 1
            elif tokens[popen].text == "(":
                depth -= 1
                if depth == 0:
                    break
            popen -= 1
        self.name_tok = tokens[popen - 1]
        start = popen - 1
        while start > 0 and tokens[start - 1].text not in (";", "}"):
            start -= 1
        self.head = tokens[start:popen - 1]
        self.start = tokens[start].start
        self.params = tokens[popen + 1:brace - 1]
        self.text = text
        self.body_start = tokens[brace].start
        self.body_end = tokens[self.close].end
        self.param_names, self.why_not = self._parse()

    def _parse(self):
        words = [t.text for t in self.head]
        if "_Noreturn" in words or "noreturn" in words:
            return None, "_Noreturn"
        groups, cur, depth = [], [], 0
        for t in self.params:
            if t.text in ("(", "["):
                depth += 1
            elif t.text in (")", "]"):
                depth -= 1
            if t.text == "," and depth == 0:
                groups.append(cur)
                cur = []
            else:
                cur.append(t)
        groups.append(cur)
        names = []
        for g in groups:
            texts = [t.text for t in g]
            if texts in ([], ["void"]) and len(groups) == 1:
                return [], None
            if "..." in texts:
                return None, "variadic"
            if "(" in texts:
                return None, "a function-pointer parameter"
            idents = [t.text for t in g if t.kind == clex.IDENT]
            if "[" in texts:
                idents = [t.kind == clex.IDENT and t.text for t in g[:texts.index("[")]]
                idents = [x for x in idents if x]
            if len(idents) < 2:
                return None, "an unnamed parameter"
            names.append(idents[-1])
        return names, None

    def forwardable(self, noreturn):
        """Its mutants can be copies the original's entry calls."""
        return self.param_names is not None and self.name_tok.text not in noreturn

    @property
    def inlinable(self):
        """Its mutants' bodies can sit inside its own: no label to repeat."""
        return not any(t.text == "goto" for t in self.tokens[self.brace:self.close])

    @property
    def returns_void(self):
        rest = [t.text for t in self.head if t.text not in SPECIFIERS
                and not t.text.isupper()]        # RT_COLD and such macros
        return rest == ["void"]

    def header(self, name):
        """The declaration up to the body, named name. A copy is no
        constructor or destructor: it runs only when its original
        dispatches to it (a copy of hot_start that kept the attribute ran
        at every start, whichever mutant was picked)."""
        t = self.text
        head = (t[self.start:self.name_tok.start] + name +
                t[self.name_tok.end:self.body_start]).rstrip()
        if name == self.name_tok.text:
            return head
        return _CTOR.sub("", head)


_CTOR = re.compile(r"__attribute__\s*\(\(\s*(?:constructor|destructor)\s*"
                   r"(?:\(\s*\d*\s*\))?\s*\)\)")
_NORETURN = re.compile(r"(?:_Noreturn|noreturn\s*\)\s*\))[^;{]*?\b(\w+)\s*\(")


def noreturn_names(texts):
    """Functions declared _Noreturn (or noreturn) anywhere in the texts: a
    definition may leave the specifier to its header's declaration."""
    names = set()
    for text in texts:
        names.update(_NORETURN.findall(text))
    return names


def functions(text):
    """The function definitions of text, in order: a "{" at file scope
    just after a ")"."""
    tokens, funcs, depth = clex.tokenize(text), [], 0
    for i, t in enumerate(tokens):
        if t.text == "{":
            if depth == 0 and i > 0 and tokens[i - 1].text == ")":
                funcs.append(Function(tokens, i, text))
            depth += 1
        elif t.text == "}":
            depth -= 1
    return funcs


def instrument(text, mutants, first=1, noreturn=frozenset(), env="RT_MUTANT"):
    """(new text, {mutant id: number}) for the mutants that fit in a schema,
    numbered from first; the others are left out of the map. Functions named
    in noreturn (declared so elsewhere) have their mutants inlined, as
    _Noreturn and variadic ones do. env: the variable that picks a mutant
    (the configuration's build.mutant_env)."""
    funcs = functions(text)
    numbers, by_func = {}, {}
    for m in mutants:
        if len({e.path for e in m.edits}) != 1:
            continue
        inside = {next((f.start for f in funcs if f.body_start < e.start
                        and e.end <= f.body_end), None) for e in m.edits}
        if len(inside) != 1 or None in inside:
            continue                     # edits outside a body, or in two functions
        f = next(f for f in funcs if f.start in inside)
        if not f.forwardable(noreturn) and not f.inlinable:
            continue
        by_func.setdefault(f.start, (f, []))[1].append(m)
    if not by_func:
        return text, {}
    # The prelude goes first: clex does not see preprocessor lines, so any
    # later place may sit inside an #if that some builds leave out.
    out, at, n = [PRELUDE.lstrip("\n").replace("RT_MUTANT", env)], 0, first - 1
    for start in sorted(by_func):
        f, ms = by_func[start]
        out.append(text[at:f.start])
        forward = f.forwardable(noreturn)
        out.append(f"\n#ifndef {NONE}\n")
        if forward:
            out.append(f.header(f.name_tok.text) + ";\n")   # the copies may call the original
        cases = []
        args = ", ".join(f.param_names or ())
        for m in ms:
            n += 1
            numbers[m.id] = n
            body = text[f.body_start:f.body_end]
            for e in sorted(m.edits, key=lambda e: e.start, reverse=True):
                at_ = e.start - f.body_start
                body = body[:at_] + e.replacement + body[e.end - f.body_start:]
            if not forward:
                # A void body that ends returns. A value-returning one that
                # ends would fall into the next case: it leaves the switch
                # instead (-Wreturn-type made such a mutant a CompileError
                # in TCE already, so this is not expected to run).
                end = "return;" if f.returns_void else "break;"
                cases.append(f"case {n}: {body} {end}")
                continue
            copy = f.header(f"{f.name_tok.text}__m{n}")
            if "static" not in [t.text for t in f.head]:
                copy = "static " + copy
            out.append(f"{copy}\n{body}\n")
            call = f"{f.name_tok.text}__m{n}({args})"
            cases.append(f"case {n}: {call}; return;" if f.returns_void
                         else f"case {n}: return {call};")
        out.append("#endif\n")
        out.append(text[f.start:f.body_start + 1])
        # the pick is never 0 (numbers start at 1): with none picked the
        # switch only breaks, and the original body runs
        out.append(f"\n#ifndef {NONE}\n switch (rt__schemata_id()) {{ "
                   + " ".join(cases) + " default: break; }\n#endif\n")
        at = f.body_start + 1
    out.append(text[at:])
    return "".join(out), numbers


# ---- a syntax schema: many mutants of a file checked by one compilation ---

def syntax_copies(text, mutants, noreturn=frozenset(), tag="@m"):
    """(new text, {mutant id: its tag}) where each mutant of mutants whose
    edits fall in one function body becomes an unused static copy of that
    function, put after the original under `#line 1 "<tag><n>"`, so that a
    diagnostic of its copy names it ("@m7:3:5: error: ..."). The original
    file is otherwise unchanged: compiled once (-fsyntax-only), it judges
    every copy at once, where a compilation each costs 0.07 s of starting
    the compiler and reading the headers (task.c, 2 Dec 2026).

    A mutant in a function declared noreturn is left out of the map, to be
    compiled alone: a copy of it may lack the promise its declaration
    makes. What a copy cannot show, a file-scope static left unused by a
    mutant (the original still uses it), -fsyntax-only never reports
    either: gcc says "defined but not used" only when it compiles."""
    funcs = functions(text)
    by_func, tags = {}, {}
    for m in mutants:
        f = next((f for f in funcs if all(f.body_start < e.start and e.end <= f.body_end
                                          for e in m.edits)), None)
        if f is None or f.name_tok.text in noreturn or \
                "_Noreturn" in [t.text for t in f.head]:
            continue
        by_func.setdefault(f.body_end, (f, []))[1].append(m)
    out, at, n = [], 0, 0
    for end in sorted(by_func):
        f, ms = by_func[end]
        out.append(text[at:end])
        resume = text.count("\n", 0, end) + 1      # the line the original goes on with
        for m in ms:
            n += 1
            tags[m.id] = f"{tag}{n}"
            body = text[f.body_start:f.body_end]
            for e in sorted(m.edits, key=lambda e: e.start, reverse=True):
                at_ = e.start - f.body_start
                body = body[:at_] + e.replacement + body[e.end - f.body_start:]
            head = f.header(f"{f.name_tok.text}__s{n}")
            if "static" not in [t.text for t in f.head]:
                head = "static " + head
            out.append(f'\n#line 1 "{tag}{n}"\n__attribute__((unused)) {head}\n{body}\n')
        out.append(f'#line {resume} "<stdin>"\n')
        at = end
    out.append(text[at:])
    return "".join(out), tags


# ---- a comparison schema: many mutants of a file compared by one compilation

def _static_local(f):
    """A body with a static variable: each copy would have its own, named
    apart (x.1, x.2), so no copy's code could equal another's."""
    return any(t.text == "static" for t in f.tokens[f.brace:f.close])


def comparable(f, noreturn=frozenset()):
    """A copy of f compiles to the code f's own mutant would: no static of
    its own, no noreturn promise made elsewhere that a copy would lack."""
    return not _static_local(f) and f.name_tok.text not in noreturn


def compare_copies(text, mutants, noreturn=frozenset(), tag="__tce"):
    """(new text, {mutant id: (its copy's name, its function's)},
    {function: (its two reference copies' names)}) for the mutants whose edits fall in one
    body of a comparable function. After each such function come copies,
    each static and used (so each is compiled, whole, and called by
    nobody, so no caller's constants specialise one): the original's
    body twice, first and last, and each mutant's between them. Equal
    code for a mutant's copy and the original's is equal behaviour
    wherever the function is called; the two copies of the original show
    that a copy's place in the file changes none of its code.

    Each copy is numbered as the original's lines are (#line), and
    __func__ names the original, so a line number or a name the code
    holds is the mutant's own; a diagnostic names its copy only by the
    function it is in ("In function 'f__tce7'")."""
    funcs = functions(text)
    by_func = {}
    for m in mutants:
        f = next((f for f in funcs if all(f.body_start < e.start and e.end <= f.body_end
                                          for e in m.edits)), None)
        if f is None or not comparable(f, noreturn):
            continue
        by_func.setdefault(f.body_end, (f, []))[1].append(m)
    out, at, n, copy_of, references = [], 0, 0, {}, {}
    for end in sorted(by_func):
        f, ms = by_func[end]
        out.append(text[at:end])
        name = f.name_tok.text
        head_text = text[f.start:f.body_start]
        gap = head_text[len(head_text.rstrip()):]
        line = text.count("\n", 0, f.start) + 1
        original = text[f.body_start:f.body_end]
        copies = [(f"{name}{tag}{n + 1}", original)]
        for m in ms:
            body = original
            for e in sorted(m.edits, key=lambda e: e.start, reverse=True):
                at_ = e.start - f.body_start
                body = body[:at_] + e.replacement + body[e.end - f.body_start:]
            copies.append((f"{name}{tag}{n + 1 + len(copies)}", body))
            copy_of[m.id] = (copies[-1][0], name)
        copies.append((f"{name}{tag}{n + 1 + len(copies)}", original))
        n += len(copies)
        references[name] = (copies[0][0], copies[-1][0])
        out.append(f'\n#define __func__ "{name}"\n')
        for copy, body in copies:
            head = f.header(copy)
            if "static" not in [t.text for t in f.head]:
                head = "static " + head
            out.append(f'#line {line} "<stdin>"\n__attribute__((used)) {head}{gap}{body}\n')
        out.append(f'#undef __func__\n#line {text.count(chr(10), 0, end) + 1} "<stdin>"\n')
        at = end
    out.append(text[at:])
    return "".join(out), copy_of, references
