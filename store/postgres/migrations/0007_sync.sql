-- Sync between sites (docs/sync.md, server/sitesync).

-- The change feed: one row per change of a record homed here, appended in the
-- transaction of the change while the feed is on (meta row 'change_feed'). Writers
-- take an advisory lock before appending (changes.go), so sequences follow commits.
CREATE TABLE changes (
    seq     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind    text COLLATE "C" NOT NULL,
    id      bigint NOT NULL,
    ref     bigint NOT NULL DEFAULT 0,
    deleted boolean NOT NULL DEFAULT false,
    at      timestamptz NOT NULL
);

-- The latest values of a bed as its spatial server gave them (store.BedValues),
-- kept byte for byte.
CREATE TABLE bed_values (
    bed_id    bigint PRIMARY KEY REFERENCES beds ON DELETE CASCADE,
    garden_id bigint NOT NULL REFERENCES gardens ON DELETE CASCADE,
    at        timestamptz NOT NULL,
    data      bytea NOT NULL
);
CREATE INDEX bed_values_garden_id ON bed_values (garden_id, bed_id);

-- The last sequence applied from each other site, written in the transaction that
-- applies its changes.
CREATE TABLE replica_cursors (
    site integer PRIMARY KEY CHECK (site BETWEEN 1 AND 8191),
    seq  bigint NOT NULL
);

-- The head office's register of field boxes (gardend site add). The office is site 1,
-- whose row only holds the lease of sending the office's records. lease_* says which
-- office node applies the site's changes (or sends the office's).
CREATE TABLE sites (
    number          integer PRIMARY KEY CHECK (number BETWEEN 1 AND 8191),
    name            text COLLATE "C" NOT NULL UNIQUE,
    user_key        text COLLATE "C" NOT NULL,
    created         timestamptz NOT NULL,
    removed         timestamptz,
    last_contact    timestamptz,
    backlog_records bigint NOT NULL DEFAULT 0,
    backlog_bytes   bigint NOT NULL DEFAULT 0,
    oldest_unsent   timestamptz,
    lease_node      text NOT NULL DEFAULT '',
    lease_until     timestamptz
);
INSERT INTO sites (number, name, user_key, created) VALUES (1, 'office', '', now());

-- Compaction finds a record's earlier changes.
CREATE INDEX changes_record ON changes (kind, id, ref, seq);
