-- A saved heartbeat (0009) is put on its agent's gateway once the agent is live: after a start the web made, and by
-- the web's sweep for wakes it did not make (a due job, a restart after a crash). Whoever applies one claims it first
-- until `claimed_until`, so two replicas (or a start's follow-up and the sweep) never add the job twice.
alter table heartbeat_settings add column claimed_until timestamptz;
