WITH q AS (SELECT NULLIF(replace(plainto_tsquery($1::regconfig, $2)::text, '&', '|'), '')::tsquery AS tq),
		v AS (SELECT id, 1 - d AS s FROM (SELECT id, embedding::vector(384) <=> $3::vector(384) AS d FROM quarry_documents WHERE collection_id = 7 AND (metadata->'tenant' = $4::text::jsonb AND ((jsonb_typeof(metadata->'year') = 'number' AND metadata->'year' >= $5::text::jsonb) OR (jsonb_typeof(metadata->'tags') = 'array' AND metadata->'tags' ?| $6::text[])))
			ORDER BY embedding::vector(384) <=> $3::vector(384) LIMIT 20) v0),
		k AS (SELECT id, ts_rank(tsv, q.tq, 1) AS s FROM quarry_documents, q
			WHERE q.tq IS NOT NULL AND tsv @@ q.tq AND collection_id = 7 AND (metadata->'tenant' = $4::text::jsonb AND ((jsonb_typeof(metadata->'year') = 'number' AND metadata->'year' >= $5::text::jsonb) OR (jsonb_typeof(metadata->'tags') = 'array' AND metadata->'tags' ?| $6::text[]))) ORDER BY s DESC, id LIMIT 20)
		SELECT 'v', id, s FROM v UNION ALL SELECT 'k', id, s FROM k
