-- Stores each load's per-product daily sums under its batch id (a rerun of the same load replaces
-- its own rows; repeated event_ids within a load are collapsed) and adds up all loads' sums.
CREATE TABLE IF NOT EXISTS batch_totals (
    batch_id   BIGINT,
    product_id INTEGER,
    day        DATE,
    units      BIGINT,
    revenue    DECIMAL(18,2),
    PRIMARY KEY (batch_id, product_id, day)
);

INSERT OR REPLACE INTO batch_totals
SELECT _batch_id, product_id, CAST(ts_event AS DATE), SUM(quantity), SUM(amount)
FROM (SELECT DISTINCT ON (event_id) * FROM sales_batch ORDER BY event_id, _arrival_seq)
GROUP BY ALL;

CREATE OR REPLACE TABLE product_daily_units AS
SELECT product_id, day, SUM(units) AS units, SUM(revenue) AS revenue
FROM batch_totals
GROUP BY product_id, day;
