-- Adds each new order to its customer's running totals, then records the applied order ids in a
-- separate statement; the rollup joins the per-customer totals to the current regions.
CREATE TABLE IF NOT EXISTS applied_orders (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS customer_totals (
    customer_id INTEGER PRIMARY KEY,
    revenue     DECIMAL(18,2),
    orders      BIGINT
);

CREATE TABLE IF NOT EXISTS customer_region (
    customer_id INTEGER PRIMARY KEY,
    region      VARCHAR,
    ts_event    TIMESTAMP,
    event_id    BIGINT
);

CREATE TEMP TABLE new_orders AS
SELECT DISTINCT ON (event_id) event_id, customer_id, amount
FROM sales_batch
WHERE event_id NOT IN (SELECT event_id FROM applied_orders)
ORDER BY event_id;

INSERT INTO customer_totals
SELECT customer_id, SUM(amount), COUNT(*)
FROM new_orders
GROUP BY customer_id
ON CONFLICT (customer_id) DO UPDATE
SET revenue = customer_totals.revenue + excluded.revenue,
    orders  = customer_totals.orders + excluded.orders;

INSERT INTO applied_orders SELECT event_id FROM new_orders;

INSERT INTO customer_region
SELECT customer_id, region, ts_event, event_id
FROM customers_batch
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) = 1
ON CONFLICT (customer_id) DO UPDATE
SET region = excluded.region, ts_event = excluded.ts_event, event_id = excluded.event_id
WHERE excluded.ts_event > customer_region.ts_event
   OR (excluded.ts_event = customer_region.ts_event AND excluded.event_id > customer_region.event_id);

CREATE OR REPLACE TABLE region_revenue AS
SELECT coalesce(r.region, 'unknown') AS region,
       CAST(SUM(t.revenue) AS DECIMAL(18,2)) AS revenue,
       CAST(SUM(t.orders) AS BIGINT) AS orders
FROM customer_totals t
LEFT JOIN customer_region r USING (customer_id)
GROUP BY ALL;
