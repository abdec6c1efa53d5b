-- Rule control: the gold, except that of orders sharing the largest amount the one with the larger
-- event_id is the largest order (the text says the smallest).
CREATE TABLE IF NOT EXISTS store_extremes (
    store_id        INTEGER PRIMARY KEY,
    largest_amount  DECIMAL(12,2),
    largest_event   BIGINT,
    largest_at      TIMESTAMP,
    smallest_amount DECIMAL(12,2)
);

MERGE INTO store_extremes t
USING (
    SELECT store_id,
           max(amount)                               AS largest_amount,
           arg_max(event_id, (amount, event_id))    AS largest_event,
           arg_max(ts_event, (amount, event_id))    AS largest_at,
           min(amount)                               AS smallest_amount
    FROM sales_batch
    GROUP BY store_id
) s
ON t.store_id = s.store_id
WHEN MATCHED THEN UPDATE SET
    largest_amount  = CASE WHEN (s.largest_amount, s.largest_event) > (t.largest_amount, t.largest_event)
                           THEN s.largest_amount ELSE t.largest_amount END,
    largest_event   = CASE WHEN (s.largest_amount, s.largest_event) > (t.largest_amount, t.largest_event)
                           THEN s.largest_event ELSE t.largest_event END,
    largest_at      = CASE WHEN (s.largest_amount, s.largest_event) > (t.largest_amount, t.largest_event)
                           THEN s.largest_at ELSE t.largest_at END,
    smallest_amount = least(s.smallest_amount, t.smallest_amount)
WHEN NOT MATCHED THEN INSERT (store_id, largest_amount, largest_event, largest_at, smallest_amount)
    VALUES (s.store_id, s.largest_amount, s.largest_event, s.largest_at, s.smallest_amount);

CREATE OR REPLACE TABLE store_order_extremes AS
SELECT store_id, largest_amount, smallest_amount, largest_at
FROM store_extremes;
