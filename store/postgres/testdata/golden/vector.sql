SELECT id, content, source_type, source_name, metadata::text, embedding, provenance::text, 1 - (embedding::vector(384) <=> $1::vector(384)) AS score
		FROM quarry_documents WHERE collection_id = 7 AND (metadata->'tenant' = $2::text::jsonb AND ((jsonb_typeof(metadata->'year') = 'number' AND metadata->'year' >= $3::text::jsonb) OR (jsonb_typeof(metadata->'tags') = 'array' AND metadata->'tags' ?| $4::text[])))
		ORDER BY embedding::vector(384) <=> $1::vector(384) LIMIT 18
