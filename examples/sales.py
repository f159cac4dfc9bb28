# Total sales per month and the best region, from the CSV mounted read-only at /data.
import csv
from collections import defaultdict

with open("/data/sales.csv") as f:
    rows = list(csv.DictReader(f))
print(f"read {len(rows)} rows")

by_month = defaultdict(float)
by_region = defaultdict(float)
for row in rows:
    amount = int(row["units"]) * float(row["unit_price"])
    by_month[row["date"][:7]] += amount
    by_region[row["region"]] += amount

best_region = max(by_region, key=by_region.get)
print(f"best region: {best_region} ({round(by_region[best_region], 2)})")

{"months": {m: round(v, 2) for m, v in sorted(by_month.items())}, "best_region": best_region}
