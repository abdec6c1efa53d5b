-- The watermark idiom of most tutorials: load only orders newer than the newest one loaded.
-- An order that arrives after a newer one was loaded is never loaded (late arrival).
{{ config(materialized='incremental', unique_key='order_id') }}

select order_id, customer_id, amount, ordered_at
from {{ source('raw', 'orders') }}
{% if is_incremental() %}
where ordered_at > (select max(ordered_at) from {{ this }})
{% endif %}
