#!/usr/bin/env python3
"""Test tool: answers with the arguments it got, and the environment it saw when asked."""
import json
import os
import sys

args = json.load(sys.stdin)
if args.get("show_env"):
    json.dump(dict(os.environ), sys.stdout)
elif args.get("measure"):
    json.dump({"len": len(args["q"])}, sys.stdout)
elif "repeat" in args:
    json.dump("x" * int(args["repeat"]), sys.stdout)
else:
    json.dump({"got": args}, sys.stdout, ensure_ascii=False)
