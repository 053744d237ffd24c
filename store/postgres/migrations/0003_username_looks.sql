-- Usernames are indexed by what they look like with Unicode's confusables (UTS #39,
-- store.UsernameLooks), case-folded: at most two looks per name, the skeleton of the
-- case-folded skeleton (username_look, recomputed) and the skeleton of the
-- case-folded name (username_look_lower; the same value when the name has one look).
-- Only gardend computes them: migrate.go's data step for this version fills both in
-- this migration's transaction and then makes the new column NOT NULL.
ALTER TABLE users ADD COLUMN username_look_lower text COLLATE "C";
CREATE INDEX users_username_look_lower ON users (username_look_lower);
