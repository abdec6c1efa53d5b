-- The fix: join on the full history. Every run rebuilds the join over every order and every
-- customer change delivered so far (one row per order, its first arrival), so a change that
-- lands after the orders it applies to still reaches them. Portable SQL: DuckDB and PostgreSQL.
{{ config(materialized='table') }}

with ranked as (
    select order_id, customer_id, amount, ordered_at, _loaded_at,
           row_number() over (partition by order_id order by _loaded_at) as arrival_rank
    from {{ source('raw', 'orders') }}
)
select order_id, customer_id, amount, ordered_at,
       (select c.tier from {{ source('raw', 'customers') }} c
        where c.customer_id = ranked.customer_id and c.effective_at <= ranked.ordered_at
        order by c.effective_at desc, c.change_id desc
        limit 1) as tier,
       _loaded_at
from ranked
where arrival_rank = 1
