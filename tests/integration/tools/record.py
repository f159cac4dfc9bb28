#!/usr/bin/env python3
"""Test tool: appends the arguments it got, as one line, to the file named by its first
argument, and answers how many calls that file holds: what reached the host, call by call."""
import sys

text = sys.stdin.read()
with open(sys.argv[1], "a") as f:
    f.write(text.replace("\n", " ") + "\n")
with open(sys.argv[1]) as f:
    sys.stdout.write('{"calls": %d}' % len(f.readlines()))
