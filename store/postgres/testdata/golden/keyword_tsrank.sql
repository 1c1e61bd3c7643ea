WITH q AS (SELECT NULLIF(replace(plainto_tsquery($1::regconfig, $2)::text, '&', '|'), '')::tsquery AS tq)
		SELECT id, content, source_type, source_name, metadata::text, embedding, provenance::text, ts_rank(tsv, q.tq, 1) AS score
		FROM quarry_documents, q WHERE q.tq IS NOT NULL AND tsv @@ q.tq AND collection_id = 7 AND (metadata->'tenant' = $3::text::jsonb AND ((jsonb_typeof(metadata->'year') = 'number' AND metadata->'year' >= $4::text::jsonb) OR (jsonb_typeof(metadata->'tags') = 'array' AND metadata->'tags' ?| $5::text[])))
		ORDER BY score DESC, id LIMIT 10
