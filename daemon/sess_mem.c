/* SPDX-License-Identifier: MIT */
/*
 * sess_mem: a client's memory-region requests. memfd regions are mapped
 * after a seal check; existing memory only for clients of the daemon's own
 * user. Regions reach the engine through commands; replies follow them.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/daemon.h"
#include "daemon/engthr.h"
#include "daemon/log.h"
#include "daemon/memory.h"
#include "daemon/names.h"
#include "daemon/session.h"
#include "engine/ring.h"


static struct smr *find_mr(struct session *s, uint32_t id)
{
	for (struct smr *m = s->mrs; m; m = m->next)
		if (m->id == id)
			return m;
	return NULL;
}

static void unlink_mr(struct session *s, struct smr *mr)
{
	for (struct smr **pp = &s->mrs; *pp; pp = &(*pp)->next) {
		if (*pp == mr) {
			*pp = mr->next;
			break;
		}
	}
	s->n_mrs--;
	s->reg_bytes -= mr->len;
	s->d->n_mrs--;
	s->d->reg_bytes -= mr->len;
}

/* After every engine thread let go of it (or never had it). */
static void free_mr(struct smr *m)
{
	if (m->kind == MR_MAPPED)
		mem_unmap(m->base, m->len);
	free(m);
}

static void mr_add_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct smr *m = find_mr(s, c->u.mr.id);

	if (c->result < 0 && m) {
		unlink_mr(s, m);
		free_mr(m);
		session_reply_err(s, c->result, "engine refused the region: %s", strerror(-c->result));
	} else if (m) {
		UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
		UcclCtl__MemRegRep mr = UCCL_CTL__MEM_REG_REP__INIT;

		m->live = true;
		mr.mr_id = m->id;
		mr.rkey = m->rkey;
		rep.body_case = UCCL_CTL__REPLY__BODY_MEM_REG;
		rep.mem_reg = &mr;
		session_reply(s, 0, NULL, &rep, NULL, 0);
	}
	session_cmd_finish(c);
}

void sess_mem_reg(struct session *s, UcclCtl__MemRegReq *q, int *fds, int nfds)
{
	const struct conf *cf = &s->d->conf;
	struct smr *m;
	struct engcmd *c;
	int r;

	if (s->n_mrs >= cf->max_mrs_per_client) {
		session_reply_err(s, -ENOSPC, "too many memory regions (max_mrs_per_client = %u)",
				  cf->max_mrs_per_client);
		goto out_fds;
	}
	if (q->len == 0 || q->len > cf->max_registered_bytes ||
	    s->reg_bytes + q->len > cf->max_registered_bytes) {
		session_reply_err(s, q->len == 0 ? -EINVAL : -ENOSPC,
				  "region of %llu bytes refused: %llu registered, max_registered_bytes = %llu",
				  (unsigned long long)q->len, (unsigned long long)s->reg_bytes,
				  (unsigned long long)cf->max_registered_bytes);
		goto out_fds;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		session_reply_err(s, -ENOMEM, "out of memory");
		goto out_fds;
	}
	m->len = q->len;
	if (q->kind == UCCL_CTL__MEM_KIND__MEM_MEMFD) {
		m->kind = MR_MAPPED;
		r = mem_map_memfd(fds[0], q->len, &m->base);
		if (r < 0) {
			session_reply_err(s, r, "memfd refused: %s", r == -EINVAL ?
					  "not a size-sealed memfd (F_SEAL_SHRINK) of at least len bytes, "
					  "without MFD_HUGETLB" :
					  strerror(-r));
			free(m);
			goto out_fds;
		}
	} else {
		m->kind = MR_REMOTE_VA;
		m->addr = q->addr;
		/* process_vm_* run with the daemon's credentials: only a client
		 * of the daemon's own user may name its memory this way, or a
		 * root daemon would read and write for anyone */
		if (s->uid != geteuid()) {
			session_reply_err(s, -EPERM, "registering existing memory needs the client to run as "
					  "the daemon's user (uid %u); use uccl_mem_alloc", (unsigned)geteuid());
			free(m);
			goto out_fds;
		}
		/* copies check that this process is still the one at its pid
		 * (it may exit while a child keeps the session); a kernel
		 * without pidfds (before 5.3) registers without the check.
		 * Watched since the connection, unless that failed. */
		if (s->owner.pidfd < 0) {
			r = mem_owner_watch(s->d->base, s->pid, &s->owner);
			if (r < 0 && r != -ENOSYS && r != -EOPNOTSUPP) {
				session_reply_err(s, r, "cannot register memory of pid %d: %s",
						  (int)s->pid, strerror(-r));
				free(m);
				goto out_fds;
			}
		}
		/* the layout read is that process's only if it still runs
		 * after the read */
		r = !q->has_addr ? -EINVAL
		    : mem_owner_exited(&s->owner) ? -ESRCH
		    : mem_check_vaddr(s->pid, s->uid, q->addr, q->len);
		if (r == 0 && mem_owner_exited(&s->owner))
			r = -ESRCH;
		if (r == -ESRCH) {
			session_reply_err(s, r, "the process that opened this connection (pid %d) has "
					  "exited: its memory cannot be registered", (int)s->pid);
			free(m);
			goto out_fds;
		}
		if (r < 0) {
			session_reply_err(s, r, "cannot register [0x%llx, +%llu) of pid %d: %s (needs read-write "
					  "anonymous, memfd or shm memory)",
					  (unsigned long long)q->addr, (unsigned long long)q->len,
					  (int)s->pid, strerror(-r));
			free(m);
			goto out_fds;
		}
	}
	c = session_cmd_new(s, ENGCMD_MR_ADD, mr_add_done);
	if (!c) {
		free_mr(m);
		session_reply_err(s, -ENOMEM, "out of memory");
		goto out_fds;
	}
	do
		m->id = ++s->next_mr_id;
	while (m->id == 0 || find_mr(s, m->id));
	m->rkey = mem_new_rkey();
	m->next = s->mrs;
	s->mrs = m;
	s->n_mrs++;
	s->reg_bytes += m->len;
	s->d->n_mrs++;
	s->d->reg_bytes += m->len;
	c->u.mr = (struct mr){
		.id = m->id, .client_id = s->id, .rkey = m->rkey, .len = m->len,
		.kind = m->kind, .base = m->base, .pid = s->pid, .addr = m->addr,
		.gone = m->kind == MR_REMOTE_VA ? mem_owner_gone(&s->owner) : NULL,
	};
	daemon_submit_all(s->d, c);
out_fds:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
}

void sess_mem_release_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct smr *m = find_mr(s, c->u.mr_rm.mr_id);

	if (m) {
		unlink_mr(s, m);
		free_mr(m);
	}
	if (!s->closing) {
		if (c->result < 0)
			session_reply_err(s, c->result, "engine: %s", strerror(-c->result));
		else
			session_reply(s, 0, NULL, NULL, NULL, 0);
	}
	session_cmd_finish(c);
}

void sess_mem_dereg(struct session *s, UcclCtl__MemDeregReq *q)
{
	struct smr *m = find_mr(s, q->mr_id);
	struct engcmd *c;

	if (!m || !m->live) {
		session_reply_err(s, -ENOENT, "no memory region %u", q->mr_id);
		return;
	}
	c = session_cmd_new(s, ENGCMD_MR_REMOVE, sess_mem_release_done);
	if (!c) {
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	m->live = false;
	c->u.mr_rm.client_id = s->id;
	c->u.mr_rm.mr_id = m->id;
	daemon_submit_all(s->d, c);
}
