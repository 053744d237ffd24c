-- What several nodes share beyond the records: the database's identity, secrets
-- every node must hold alike (the key of signed URLs), and the map of imported
-- records (store/importplan.go).

-- One row per name: 'data_id' (store.Maintenance.DataID) and 'secret:<name>'.
CREATE TABLE meta (
    name  text COLLATE "C" PRIMARY KEY,
    value bytea NOT NULL
);

-- The id each imported record got, per source, kind and the source's own id. The
-- target is not a foreign key: records of several kinds live here, and a record
-- deleted since keeps its entry (re-running the import leaves it deleted).
CREATE TABLE import_map (
    source text COLLATE "C" NOT NULL,
    kind   text COLLATE "C" NOT NULL,
    key    bigint NOT NULL,
    id     bigint NOT NULL,
    PRIMARY KEY (source, kind, key)
);
CREATE INDEX import_map_kind ON import_map (kind, id);

-- Image content may be stored before its garden exists (an import writes the images
-- of new gardens first, then the gardens in one transaction); SetGardenImage and the
-- import attach it. Content no garden shows is swept after a grace period.
ALTER TABLE images ALTER COLUMN garden_id DROP NOT NULL;
