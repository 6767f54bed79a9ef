"""objcheck.py: the clearing store is in the optimised rt_chunk_give.

The contract says give clears [base, end) "with a store the optimiser
cannot delete". A compiler that proves the bytes dead (they are freed, or
never read again) may delete a plain memset; rt__clear's empty asm that
reads memory is what stops it. This reads the object the library is built
from (objdump -dr) and fails unless rt_chunk_give, or a function of the
same object it calls, still clears: a call to memset (or a sanitizer's
__asan_memset / __tsan_memset, bzero, explicit_bzero) or a rep stos.
"""
import re
import subprocess

FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
RELOC = re.compile(r"\sR_\w+\s+([A-Za-z_.$][\w.$@]*?)(?:[-+]0x[0-9a-f]+)?$")
CALL = re.compile(r"\s(?:call|jmp|bl|b)\w*\s+[0-9a-f]+ <([^>+]+)>")
CLEARING_CALL = re.compile(r"^(?:__(?:asan|tsan|msan)_)?(?:memset|bzero|explicit_bzero|__memset_chk)(?:@.*)?$")
REP_STOS = re.compile(r"\brep\s+stos")


def _functions(disassembly):
    funcs, name = {}, None
    for line in disassembly.splitlines():
        m = FUNC.match(line)
        if m:
            name = m.group(1)
            funcs[name] = []
        elif name is not None and line.strip():
            funcs[name].append(line)
    return funcs


def _targets(body):
    for line in body:
        for pattern in (RELOC, CALL):
            m = pattern.search(line)
            if m:
                yield m.group(1)


def clears(obj, function="rt_chunk_give"):
    """(ok, why): whether function, or what it calls in obj, clears."""
    proc = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", obj],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return False, f"objdump failed: {proc.stderr.strip()}"
    funcs = _functions(proc.stdout)
    if function not in funcs:
        return False, f"{function} is not in {obj}"
    seen, todo = set(), [function]
    while todo:
        name = todo.pop()
        if name in seen or name not in funcs:
            continue
        seen.add(name)
        for line in funcs[name]:
            if REP_STOS.search(line):
                return True, f"rep stos in {name}"
        for target in _targets(funcs[name]):
            if CLEARING_CALL.match(target):
                return True, f"{name} calls {target}"
            todo.append(target.split("@")[0])
    return False, f"no memset, bzero or rep stos in {', '.join(sorted(seen))}"
