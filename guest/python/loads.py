# Which libraries load, asked inside the sandbox: run as a cell's code (src/lib/run/library_check.c)
# with stdin a JSON array of entries, each the names one library is imported by, and argv[1]
# the first entry to try. One line per entry on stdout as it is done, "codecell-loads I ok" or
# "codecell-loads I failed CLASS: MESSAGE", so that what was answered before a limit stopped
# the run is not lost; the entry under way then is the one that broke it.
import importlib
import json
import sys

entries = json.loads(sys.stdin.read())
for i in range(int(sys.argv[1]), len(entries)):
    try:
        for name in entries[i]:
            importlib.import_module(name)
        answer = "ok"
    except (Exception, SystemExit) as e:
        answer = "failed %s: %s" % (type(e).__name__, " ".join(str(e).split()))
    print("codecell-loads %d %s" % (i, answer[:300]), flush=True)
