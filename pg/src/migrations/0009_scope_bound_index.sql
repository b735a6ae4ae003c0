-- 9: the scope bound (migration 8) found by walking the bounds newest first. A search filtered
-- by sessions bounds its walk by the largest message id of the sessions its filter admits; that
-- maximum was a hash join of every session of the scope with its bound: 11–14 ms for Claude
-- Code's 7,488 sessions on the 1 GB bench database (a third of the filtered search). With this
-- index the bound is the first row, newest first, whose session passes the filter: for a
-- scope that holds most sessions, the first few rows. For a narrow scope (one project's few
-- sessions), where that walk would be long, the planner keeps the join.
CREATE INDEX session_bounds_newest ON session_bounds (last_message_id);
