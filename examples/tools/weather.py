#!/usr/bin/env python3
"""A sample command tool: reads its JSON arguments on stdin, answers JSON on stdout."""
import json
import sys

args = json.load(sys.stdin)
city = args.get("city", "")
if not city:
    print("city must not be empty", file=sys.stderr)
    sys.exit(1)
days = int(args.get("days", 1))
forecast = [{"day": d, "city": city, "sky": ["sunny", "cloudy", "rain"][(len(city) + d) % 3],
             "high_c": 12 + (len(city) * 3 + d) % 15} for d in range(days)]
json.dump({"city": city, "forecast": forecast}, sys.stdout)
