#!/usr/bin/env python3
"""Test tool: fails with a message on stderr."""
import sys

sys.stdin.read()
print("the upstream API said no: quota exceeded", file=sys.stderr)
sys.exit(3)
