-- Expected customer_net_spend: sales and refunds aggregated separately per customer, then joined.
WITH customers AS (
    SELECT DISTINCT customer_id FROM orders
),
sales AS (
    SELECT customer_id, SUM(amount) AS gross, COUNT(*) AS orders
    FROM orders WHERE kind = 'sale' GROUP BY customer_id
),
refunds AS (
    SELECT customer_id, SUM(amount) AS refunds
    FROM orders WHERE kind = 'refund' GROUP BY customer_id
)
SELECT c.customer_id,
       coalesce(s.gross, 0)                          AS gross,
       coalesce(r.refunds, 0)                        AS refunds,
       coalesce(s.gross, 0) - coalesce(r.refunds, 0) AS net,
       coalesce(s.orders, 0)                         AS orders
FROM customers c
LEFT JOIN sales s USING (customer_id)
LEFT JOIN refunds r USING (customer_id)
