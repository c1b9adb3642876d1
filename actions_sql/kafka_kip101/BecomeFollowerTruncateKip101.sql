-- Kip101.tla: BecomeFollowerTruncateKip101
-- An empty replica becomes follower truncating to 0; otherwise it truncates to
-- LookupOffsetForEpoch(leader, replica, epoch of its latest record): the leader's end offset if the
-- leader's latest record has that epoch, else the first leader offset with a larger epoch, else the
-- replica's high watermark (also when the leader's log is empty). Then BecomeFollowerAndTruncateTo.
WITH requests AS (
    SELECT f.*, q.qi, q.req
    FROM frontier AS f
    LATERAL VIEW posexplode(f.leaderAndIsrRequests) q AS qi, req
),

choices AS (
    SELECT rq.*, l.li, l.leader, r.ri, r.replica
    FROM requests AS rq
    LATERAL VIEW posexplode(Replicas) l AS li, leader        -- \E leader, replica \in Replicas
    LATERAL VIEW posexplode(Replicas) r AS ri, replica       --   then \E leaderAndIsrRequest
),

truncation AS (
    SELECT *,
        CASE
            WHEN replicaLog[ri].endOffset = 0 THEN 0                     -- ReplicaLog!IsEmpty(replica)
            WHEN replicaLog[li].endOffset = 0 THEN replicaState[ri].hw
            WHEN replicaLog[li].records[replicaLog[li].endOffset - 1].epoch
                 = replicaLog[ri].records[replicaLog[ri].endOffset - 1].epoch
                THEN replicaLog[li].endOffset
            ELSE coalesce(
                array_min(filter(sequence(0, LogSize - 1), o ->          -- OffsetsWithLargerEpochs
                    o < replicaLog[li].endOffset
                    AND try_element_at(replicaLog[li].records, o + 1).epoch
                        > replicaLog[ri].records[replicaLog[ri].endOffset - 1].epoch)),
                replicaState[ri].hw)
        END AS truncationOffset
    FROM choices
),

enabled AS (
    SELECT * FROM truncation
    WHERE leader <> replica
      AND req.leader = leader
      AND req.leaderEpoch > replicaState[ri].leaderEpoch
      AND truncationOffset <= replicaLog[ri].endOffset                   -- ReplicaLog!TruncateTo
),

final AS (
    SELECT
        transform(replicaLog, (x, i) -> IF(i = ri, named_struct(
            'endOffset', truncationOffset,
            'records', transform(x.records, (rec, o) -> IF(o < truncationOffset, rec, NULL))), x)) AS replicaLog,
        transform(replicaState, (x, i) -> IF(i = ri, named_struct(
            'hw', least(truncationOffset, x.hw), 'leaderEpoch', req.leaderEpoch,
            'leader', leader, 'isr', req.isr), x)) AS replicaState,
        nextRecordId, nextLeaderEpoch, leaderAndIsrRequests, quorumState,
        _parent, (li * size(Replicas) + ri) * (MaxLeaderEpoch + 1) + qi AS _choice
    FROM enabled
)

SELECT * FROM final
