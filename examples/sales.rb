# Total sales per month and the best region, from the CSV mounted read-only at /data.
require "csv"

rows = CSV.read("/data/sales.csv", headers: true)
puts "read #{rows.size} rows"

by_month = Hash.new(0.0)
by_region = Hash.new(0.0)
rows.each do |row|
  amount = row["units"].to_i * row["unit_price"].to_f
  by_month[row["date"][0, 7]] += amount
  by_region[row["region"]] += amount
end

best_region, best_total = by_region.max_by { |_, total| total }
puts "best region: #{best_region} (#{best_total.round(2)})"

{ months: by_month.sort.to_h.transform_values { |v| v.round(2) }, best_region: best_region }
