-- Reserved: number 11 belongs to the tenancy filter of the events service,
-- merged from another branch; this placeholder keeps the numbers gapless
-- until then, and goes when that migration comes.
SELECT 1;

---- create above / drop below ----

SELECT 1;
