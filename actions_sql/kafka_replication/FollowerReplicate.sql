-- KafkaReplication.tla: FollowerReplicate
-- Unfenced replication: a follower of a presumed leader copies the leader's record at its own end
-- offset, and takes the leader's high watermark up to its new end offset. No epoch is checked.
WITH choices AS (
    SELECT f.*, fo.fi, fo.follower, l.li, l.leader
    FROM frontier AS f
    LATERAL VIEW posexplode(Replicas) fo AS fi, follower     -- \E follower, leader \in Replicas
    LATERAL VIEW posexplode(Replicas) l AS li, leader
),

enabled AS (
    SELECT * FROM choices
    WHERE replicaState[li].leader = leader                               -- ReplicaPresumesLeadership(leader)
      AND replicaState[fi].leader = leader                               -- ReplicaIsFollowing(follower, leader)
      AND replicaLog[fi].endOffset < LogSize                             -- ReplicateTo: Append at the end offset
      AND replicaLog[fi].endOffset < replicaLog[li].endOffset            --   of an entry the leader has
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
