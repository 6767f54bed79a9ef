"""The curated catalog (this tree: mutants/*.mut) and the ledger (this
tree: mutants/equivalent), where the configuration (catalog.files,
catalog.ledger) puts them.

The catalog format is docs/conventions.md's: `== name`, `seed:`, `about:`,
then `file: path` followed by `--- find` / `+++ replace` pairs. A find
block is whole lines and must occur exactly once in its file, at the start
of a line; otherwise the entry is stale and the run fails naming it. Lines
starting with `#` outside a block, and blank lines around blocks, are
ignored.
"""
import pathlib

from .model import CURATED, Edit, Mutant, location_of


class CatalogError(Exception):
    """A malformed or stale entry; the message starts with the entry's name."""

    def __init__(self, name, why):
        super().__init__(f"{name}: {why}")
        self.name = name
        self.why = why


class Entry:
    def __init__(self, name, where):
        self.name = name
        self.where = where          # "mutants/x.mut:12", for messages
        self.seed = ""
        self.about = ""
        self.oracle = ""            # `oracle:`: the further oracle it meets first
        self.pairs = []             # [(path, find_lines, replace_lines)]


def _trim(lines):
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def parse(text, source="<catalog>"):
    """The entries of one .mut file, in order."""
    entries, entry, path, block, kind = [], None, None, None, None

    def close_block():
        nonlocal block, kind
        if kind == "find":
            entry.pairs.append([path, _trim(block), None])
        elif kind == "replace":
            if not entry.pairs or entry.pairs[-1][2] is not None:
                raise CatalogError(entry.name, "+++ replace without its --- find")
            entry.pairs[-1][2] = _trim(block)
        block, kind = None, None

    for number, line in enumerate(text.splitlines(), 1):
        marker = (line.startswith("== ") or line.startswith("--- ")
                  or line.startswith("+++ ") or line.startswith("file:"))
        if kind is not None and not marker:
            block.append(line)
            continue
        if kind is not None:
            close_block()
        if line.startswith("== "):
            entry = Entry(line[3:].strip(), f"{source}:{number}")
            entries.append(entry)
            path = None
        elif not line.strip() or line.startswith("#"):
            continue
        elif entry is None:
            raise CatalogError(source, f"line {number}: text before the first entry")
        elif line.startswith("seed:"):
            entry.seed = line[5:].strip()
        elif line.startswith("about:"):
            entry.about = line[6:].strip()
        elif line.startswith("oracle:"):
            entry.oracle = line[7:].strip()
        elif line.startswith("file:"):
            path = line[5:].strip()
        elif line.startswith("--- find"):
            if path is None:
                raise CatalogError(entry.name, "--- find before any file:")
            block, kind = [], "find"
        elif line.startswith("+++ replace"):
            block, kind = [], "replace"
        else:
            raise CatalogError(entry.name, f"{source}:{number}: unexpected line {line!r}")
    if kind is not None:
        close_block()
    for e in entries:
        if not e.pairs:
            raise CatalogError(e.name, "no --- find block")
        for p in e.pairs:
            if p[2] is None:
                raise CatalogError(e.name, "--- find without its +++ replace")
            if not p[1]:
                raise CatalogError(e.name, "an empty --- find block")
    return entries


def _line_starts(text, needle):
    """Offsets where needle occurs starting at the start of a line."""
    found, at = [], text.find(needle)
    while at >= 0:
        if at == 0 or text[at - 1] == "\n":
            found.append(at)
        at = text.find(needle, at + 1)
    return found


def resolve(entry, texts):
    """The entry as a Mutant against the tree's texts ({path: text}).

    Raises CatalogError (naming the entry) when a find block does not occur
    exactly once in its file, or the file is not there."""
    edits = []
    for path, find, replace in entry.pairs:
        if path not in texts:
            raise CatalogError(entry.name, f"{path} is not in the tree")
        text = texts[path]
        needle = "\n".join(find) + "\n"
        hits = _line_starts(text if text.endswith("\n") else text + "\n", needle)
        if len(hits) != 1:
            raise CatalogError(entry.name, f"the find block occurs {len(hits)} times in "
                               f"{path}, not once: the entry is stale")
        replacement = "\n".join(replace) + "\n" if replace else ""
        edits.append(Edit(path, hits[0], hits[0] + len(needle), replacement))
    first = edits[0]
    text = texts[first.path]
    return Mutant(id=entry.name, origin=CURATED, operator="Curated", about=entry.about,
                  seed=entry.seed, edits=edits, first_oracle=entry.oracle,
                  location=location_of(text, first.start, max(first.start, first.end - 1)),
                  original=text[first.start:first.end])


def load(root, texts, patterns=("mutants/*.mut",)):
    """Every entry of the catalog files (glob patterns relative to root) as
    a Mutant. Returns (mutants, errors): errors is a list of CatalogError,
    one per stale or malformed entry."""
    mutants, errors, seen = [], [], {}
    files = sorted({p for pat in patterns for p in pathlib.Path(root).glob(pat)})
    for mut in files:
        rel = str(mut.relative_to(root))
        try:
            entries = parse(mut.read_text(), rel)
        except CatalogError as e:
            errors.append(e)
            continue
        for entry in entries:
            if entry.name in seen:
                errors.append(CatalogError(entry.name, f"named twice ({seen[entry.name]} and "
                                           f"{entry.where})"))
                continue
            seen[entry.name] = entry.where
            try:
                mutants.append(resolve(entry, texts))
            except CatalogError as e:
                errors.append(e)
    return mutants, errors


def load_ledger(root, rel="mutants/equivalent"):
    """The ledger (rel, relative to root): one `<id> <reason>` a line, `#`
    comments. Returns {id: reason}; a line without a reason is an error."""
    ledger = {}
    if not rel:
        return ledger
    path = pathlib.Path(root, rel)
    if not path.exists():
        return ledger
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) < 2:
            raise CatalogError(parts[0], f"{rel}:{number}: no reason given")
        ledger[parts[0]] = parts[1]
    return ledger
