-- Kip320FirstTry.tla: FollowerFetch
-- A follower whose last record matches the leader's epoch at that offset
-- (IsFollowerCaughtUpToLeaderEpoch at its end offset) copies the leader's next record and takes the
-- leader's high watermark up to its new end offset.
WITH choices AS (
    SELECT f.*, fo.fi, fo.follower, l.li, l.leader
    FROM frontier AS f
    LATERAL VIEW posexplode(Replicas) fo AS fi, follower     -- \E follower, leader \in Replicas
    LATERAL VIEW posexplode(Replicas) l AS li, leader
),

enabled AS (
    SELECT * FROM choices
    WHERE replicaState[li].leader = leader                               -- IsFollowerCaughtUpToLeaderEpoch(leader, follower, followerEndOffset)
      AND replicaState[fi].leader = leader
      AND (replicaLog[fi].endOffset = 0
           OR (replicaLog[fi].endOffset - 1 < replicaLog[li].endOffset
               AND try_element_at(replicaLog[fi].records, replicaLog[fi].endOffset).epoch
                   = try_element_at(replicaLog[li].records, replicaLog[fi].endOffset).epoch))
      AND replicaLog[fi].endOffset < LogSize                             -- ReplicaLog!ReplicateTo(leader, follower)
      AND replicaLog[fi].endOffset < replicaLog[li].endOffset
),

final AS (
    SELECT
        transform(replicaLog, (x, i) -> IF(i = fi, named_struct(
            'endOffset', x.endOffset + 1,
            'records', transform(x.records, (rec, o) -> IF(o = x.endOffset, replicaLog[li].records[o], rec))), x)) AS replicaLog,
        transform(replicaState, (x, i) -> IF(i = fi, named_struct(
            'hw', least(replicaState[li].hw, replicaLog[fi].endOffset + 1),
            'leaderEpoch', x.leaderEpoch, 'leader', x.leader, 'isr', x.isr), x)) AS replicaState,
        nextRecordId, nextLeaderEpoch, leaderAndIsrRequests, quorumState,
        _parent, fi * size(Replicas) + li AS _choice
    FROM enabled
)

SELECT * FROM final
