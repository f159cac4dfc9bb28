# Writes a report into the read-write folder mounted at /out; the file appears on the host.
require "csv"

rows = CSV.read("/data/sales.csv", headers: true)
units = rows.group_by { |r| r["product"] }.transform_values { |rs| rs.sum { |r| r["units"].to_i } }
lines = ["# Units per product", ""] + units.sort_by { |_, n| -n }.map { |p, n| "- #{p}: #{n}" }
File.write("/out/report.md", lines.join("\n") + "\n")
Dir.children("/out")
