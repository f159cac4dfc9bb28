#!/usr/bin/env python3
"""Test tool: answers something that is not JSON."""
import sys

sys.stdin.read()
print("{not json")
