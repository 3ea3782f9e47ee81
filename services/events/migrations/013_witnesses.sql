-- Witnesses (C2SP tlog-witness) cosign the log's checkpoints. For each
-- witness, by its key's name: the size of the latest checkpoint it has
-- seen of this log (what the next consistency proof starts from), and the
-- cosignature line it returned for each checkpoint it signed, which the
-- served checkpoint carries after the log's own signature while its note
-- is the one cosigned (a checkpoint signed again at the same size, with
-- the asset heads after an upgrade, is cosigned again).
CREATE TABLE witness_state (
    witness text PRIMARY KEY,
    size    bigint NOT NULL
);

CREATE TABLE witness_cosignatures (
    size        bigint NOT NULL,
    witness     text NOT NULL,
    note        text NOT NULL, -- the checkpoint as the log signed it, which the line cosigns
    line        text NOT NULL, -- "— <name> <base64>\n", as returned
    cosigned_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (size, witness)
);

---- create above / drop below ----

DROP TABLE witness_cosignatures;
DROP TABLE witness_state;
