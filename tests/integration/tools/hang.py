#!/usr/bin/env python3
"""Test tool: never answers."""
import time

time.sleep(1000)
