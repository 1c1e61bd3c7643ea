WITH terms AS MATERIALIZED (SELECT lexeme, quote_literal(lexeme)::tsquery AS tq FROM unnest(to_tsvector($1::regconfig, $2))),
		nd AS (SELECT count(*)::float8 AS n FROM quarry_documents WHERE collection_id = 7),
		idf AS MATERIALIZED (SELECT t.lexeme, ln(1 + (nd.n - d.df + 0.5) / (d.df + 0.5)) AS idf FROM terms t, nd,
			LATERAL (SELECT count(*)::float8 AS df FROM quarry_documents WHERE collection_id + 0 = 7 AND tsv @@ t.tq) d),
		cand AS MATERIALIZED (SELECT id, tsv, length(tsv)::float8 AS dl FROM quarry_documents, (SELECT string_agg(tq::text, ' | ')::tsquery AS q FROM terms) tq
			WHERE tsv @@ tq.q AND collection_id + 0 = 7 AND (metadata->'tenant' = $4::text::jsonb AND ((jsonb_typeof(metadata->'year') = 'number' AND metadata->'year' >= $5::text::jsonb) OR (jsonb_typeof(metadata->'tags') = 'array' AND metadata->'tags' ?| $6::text[]))) ORDER BY ts_rank(tsv, tq.q, 1) DESC LIMIT 200),
		avgdl AS (SELECT avg(dl) AS a FROM cand),
		tl AS (SELECT array_agg(lexeme) AS l FROM terms),
		tf AS MATERIALIZED (SELECT c.id, c.dl, u.lexeme, array_length(u.positions, 1)::float8 AS tf
			FROM cand c, tl, LATERAL (SELECT * FROM unnest(c.tsv) WHERE lexeme = ANY(tl.l)) u),
		kw AS (SELECT tf.id, sum(idf.idf * tf.tf * 1.9 / (tf.tf + 0.9 * (0.6 + 0.4 * tf.dl / avgdl.a))) AS s
			FROM tf JOIN idf USING (lexeme) CROSS JOIN avgdl
			GROUP BY tf.id ORDER BY s DESC, tf.id LIMIT 20),
		v AS (SELECT id, 1 - d AS s FROM (SELECT id, embedding::vector(384) <=> $3::vector(384) AS d FROM quarry_documents WHERE collection_id = 7 AND (metadata->'tenant' = $4::text::jsonb AND ((jsonb_typeof(metadata->'year') = 'number' AND metadata->'year' >= $5::text::jsonb) OR (jsonb_typeof(metadata->'tags') = 'array' AND metadata->'tags' ?| $6::text[])))
			ORDER BY embedding::vector(384) <=> $3::vector(384) LIMIT 20) v0)
		SELECT 'v', id, s FROM v UNION ALL SELECT 'k', id, s FROM kw
