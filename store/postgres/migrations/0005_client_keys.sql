-- Idempotency keys of logs and photos (store.LogStore.CreateLogOnce, AddPhotoOnce):
-- a client's retry after a lost answer finds what its first try made instead of
-- recording it twice. A log's key is its author's own, per garden; a photo's is
-- per log.
ALTER TABLE logs ADD COLUMN client_key text COLLATE "C";
CREATE UNIQUE INDEX logs_client_key ON logs (garden_id, author_id, client_key) WHERE client_key IS NOT NULL;
ALTER TABLE photos ADD COLUMN client_key text COLLATE "C";
CREATE UNIQUE INDEX photos_client_key ON photos (log_id, client_key) WHERE client_key IS NOT NULL;
