-- Expected store_order_extremes: the largest and smallest amount per store by plain aggregates;
-- the largest order is the smallest event_id among the store's orders at the largest amount.
WITH extremes AS (
    SELECT store_id, max(amount) AS largest_amount, min(amount) AS smallest_amount
    FROM sales
    GROUP BY store_id
),
winner AS (
    SELECT s.store_id, min(s.event_id) AS event_id
    FROM sales s
    JOIN extremes e ON e.store_id = s.store_id AND e.largest_amount = s.amount
    GROUP BY s.store_id
)
SELECT e.store_id, e.largest_amount, e.smallest_amount, s.ts_event AS largest_at
FROM extremes e
JOIN winner w ON w.store_id = e.store_id
JOIN sales s ON s.event_id = w.event_id
