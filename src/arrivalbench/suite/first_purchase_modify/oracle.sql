-- Expected customer_first_purchase: earliest and latest purchase time per customer, and the
-- number of stores counted from the distinct (customer, store) pairs, joined on the customer
-- (a pair without a store_id is not a store).
WITH span AS (
    SELECT customer_id, min(ts_event) AS first_purchase_at, max(ts_event) AS last_purchase_at
    FROM sales
    GROUP BY customer_id
),
pairs AS (
    SELECT customer_id, store_id FROM sales
    UNION
    SELECT customer_id, store_id FROM sales
)
SELECT s.customer_id, s.first_purchase_at, s.last_purchase_at, COUNT(p.store_id) AS stores_visited
FROM span s
JOIN pairs p ON p.customer_id = s.customer_id
GROUP BY s.customer_id, s.first_purchase_at, s.last_purchase_at
