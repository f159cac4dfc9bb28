#!/usr/bin/env python3
"""Test tool: writes its pid and the pid of a child it leaves in its process group to the file
named by the "file" argument, then never answers. The host checks that both are gone."""
import json
import os
import time

path = json.load(__import__("sys").stdin)["file"]
child = os.fork()
if child == 0:
    time.sleep(1000)
    os._exit(0)
with open(path + ".tmp", "w") as f:
    f.write("%d %d" % (os.getpid(), child))
os.rename(path + ".tmp", path)
time.sleep(1000)
