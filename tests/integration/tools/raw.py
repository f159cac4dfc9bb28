#!/usr/bin/env python3
"""Test tool: answers {"emit": TEXT} with TEXT as it is, anything else with the bytes it read
on stdin (as {"stdin": "..."}): what reached it, digit for digit."""
import json
import sys

text = sys.stdin.read()
args = json.loads(text)
if "emit" in args:
    sys.stdout.write(args["emit"])
else:
    json.dump({"stdin": text}, sys.stdout)
