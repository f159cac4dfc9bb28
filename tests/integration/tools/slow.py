#!/usr/bin/env python3
"""Test tool: answers {"slept": s} after sleeping s seconds (the "s" argument, 5 by default)."""
import json
import sys
import time

seconds = json.load(sys.stdin).get("s", 5)
time.sleep(seconds)
print(json.dumps({"slept": seconds}))
