"""A candidate that searches its own process's memory for a token (test_runner_start.py,
test_judge_server.py): what it finds shows whether anything of the judge's caller's environment
reached the runner."""

# A candidate that reports, at load, how its process started and whether a token is anywhere in
# its writable memory (heap, stack, anonymous mappings: where an environment and copies of it live).
SEARCHER = '''
import json, os, sys
import torch.nn as nn

# the token in two halves: a search for the whole would put the whole in this very memory
HEAD, TAIL = bytes.fromhex(%r), bytes.fromhex(%r)
found = []
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        fields = line.split()
        start, end = (int(x, 16) for x in fields[0].split("-"))
        path = fields[5] if len(fields) > 5 else ""
        if "r" not in fields[1] or (path and not path.startswith("[")) or path in ("[vvar]", "[vsyscall]"):
            continue
        try:
            mem.seek(start)
            data = mem.read(end - start)
        except (OSError, ValueError, OverflowError):
            continue
        at = data.find(HEAD)
        while at >= 0:
            if data[at + len(HEAD):at + len(HEAD) + len(TAIL)] == TAIL:
                found.append(path or "anonymous")
            at = data.find(HEAD, at + 1)
print("SEARCHED " + json.dumps({"found": found, "environ": sorted(os.environ),
                                "cmdline": open("/proc/self/cmdline").read().split("\\0")}))

class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp(min=0)
'''
