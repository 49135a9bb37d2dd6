/** `tail -F` for log files lives with the local provider now, which follows its agents' `logs/gateway.log`. */
export { type FollowOptions, type Follower, followFile } from '@aop/provisioner/log-follow';
