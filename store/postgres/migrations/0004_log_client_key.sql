-- A log's idempotency key (store.LogStore.CreateLogOnce): a client's retry after a
-- lost answer finds the log its first try made instead of recording it twice. The
-- key is the author's own, per garden.
ALTER TABLE logs ADD COLUMN client_key text COLLATE "C";
CREATE UNIQUE INDEX logs_client_key ON logs (garden_id, author_id, client_key) WHERE client_key IS NOT NULL;
