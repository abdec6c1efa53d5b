-- Computes each store's new extremes from the stored ones plus the batch, then empties the stored
-- table and refills it, as separate statements with no transaction.
CREATE TABLE IF NOT EXISTS store_extremes (
    store_id        INTEGER PRIMARY KEY,
    largest_amount  DECIMAL(12,2),
    largest_event   BIGINT,
    largest_at      TIMESTAMP,
    smallest_amount DECIMAL(12,2)
);

CREATE TEMP TABLE next_extremes AS
WITH candidates AS (
    SELECT store_id, largest_amount AS amount, largest_event AS event_id, largest_at AS ts_event,
           smallest_amount
    FROM store_extremes
    UNION ALL
    SELECT store_id, amount, event_id, ts_event, amount
    FROM sales_batch
)
SELECT store_id,
       max(amount)                               AS largest_amount,
       arg_max(event_id, (amount, -event_id))    AS largest_event,
       arg_max(ts_event, (amount, -event_id))    AS largest_at,
       min(smallest_amount)                      AS smallest_amount
FROM candidates
GROUP BY store_id;

DELETE FROM store_extremes;

INSERT INTO store_extremes SELECT * FROM next_extremes;

CREATE OR REPLACE TABLE store_order_extremes AS
SELECT store_id, largest_amount, smallest_amount, largest_at
FROM store_extremes;
