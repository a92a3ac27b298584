! attention_backward (naive): given Q, K, V, dO and the stored n x n
! probabilities P of a forward (computed untimed in setup), compute
!   dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(P * dP)),
!   dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d).
! p(:, i) and ds(:, i) are row i (heap, n x n each).  Only the backward is timed.
module attention_backward_kernel
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  use harness
  use attn_common
  implicit none
  character(len=5), parameter :: variants(1) = ['naive']
  type(harness_cfg) :: cfg
  integer(int64) :: n, d
  real(real32), allocatable :: q(:, :), k(:, :), v(:, :), g(:, :), p(:, :), ds(:, :)
  real(real32), allocatable :: dq(:, :), dk(:, :), dv(:, :)

contains

  logical function setup(c)
    type(harness_cfg), intent(in) :: c
    integer :: st(9)
    cfg = c
    n = c%n
    d = c%d
    allocate (q(d, n), stat=st(1))
    allocate (k(d, n), stat=st(2))
    allocate (v(d, n), stat=st(3))
    allocate (g(d, n), stat=st(4))
    allocate (p(n, n), stat=st(5))
    allocate (ds(n, n), stat=st(6))
    allocate (dq(d, n), stat=st(7))
    allocate (dk(d, n), stat=st(8))
    allocate (dv(d, n), stat=st(9))
    setup = all(st == 0)
    if (.not. setup) then
      call teardown()
      return
    end if
    call fill_normal(q, n, d, 1_int64, c%seed, 1_int64)
    call fill_normal(k, n, d, 1_int64, c%seed, 2_int64)
    call fill_normal(v, n, d, 1_int64, c%seed, 3_int64)
    call fill_normal(g, n, d, 1_int64, c%seed, 4_int64)
    call fill_nan(p, n, n, 1_int64)
    call fill_nan(ds, n, n, 1_int64)
    call poison()
    call forward_probs()
  end function setup

  ! the stored P: row softmax of Q K^T / sqrt(d) in float, like a forward
  subroutine forward_probs()
    real(real32) :: scale
    integer(int64) :: i, j
    scale = 1.0_real32 / sqrt(real(d, real32))
    !$omp parallel do schedule(static) private(j)
    do i = 1, n
      do j = 1, n
        p(j, i) = dot_product(q(:, i), k(:, j)) * scale
      end do
      p(:, i) = exp_fast(p(:, i) - maxval(p(:, i)))
      p(:, i) = p(:, i) / sum(p(:, i))
    end do
    !$omp end parallel do
  end subroutine forward_probs

  subroutine poison()
    call fill_nan(dq, n, d, 1_int64)
    call fill_nan(dk, n, d, bk)
    call fill_nan(dv, n, d, bk)
  end subroutine poison

  subroutine run()
    real(real32) :: scale, dsum
    integer(int64) :: i, j, b, j0, j1
    scale = 1.0_real32 / sqrt(real(d, real32))
    ! pass 1: rows of dS and dQ
    !$omp parallel do schedule(static) private(j, dsum)
    do i = 1, n
      do j = 1, n
        ds(j, i) = dot_product(g(:, i), v(:, j))
      end do
      dsum = dot_product(p(:, i), ds(:, i))
      ds(:, i) = p(:, i) * (ds(:, i) - dsum)
      dq(:, i) = 0
      do j = 1, n
        dq(:, i) = dq(:, i) + ds(j, i) * k(:, j)
      end do
      dq(:, i) = dq(:, i) * scale
    end do
    !$omp end parallel do
    ! pass 2: dK, dV (column sums), parallel over blocks of bk keys
    !$omp parallel do schedule(static) private(i, j, j0, j1)
    do b = 1, (n + bk - 1) / bk
      j0 = (b - 1) * bk + 1
      j1 = min(b * bk, n)
      dk(:, j0:j1) = 0
      dv(:, j0:j1) = 0
      do i = 1, n
        do j = j0, j1
          dv(:, j) = dv(:, j) + p(j, i) * g(:, i)
          dk(:, j) = dk(:, j) + (ds(j, i) * scale) * q(:, i)
        end do
      end do
    end do
    !$omp end parallel do
  end subroutine run

  ! needs all rows (dK, dV sum over queries): only for n <= check_all_rows
  function check() result(err)
    real(real64) :: err
    real(real64), allocatable :: rq(:, :), rk(:, :), rv(:, :)
    err = not_checked
    if (n > check_all_rows) return
    allocate (rq(d, n), rk(d, n), rv(d, n))
    call ref_attention_backward(q, k, v, g, n, d, rq, rk, rv)
    err = rel_err(dq, rq, n * d)
    err = rel_worst(err, rel_err(dk, rk, n * d))
    err = rel_worst(err, rel_err(dv, rv, n * d))
  end function check

  logical function dump(dir)
    character(len=*), intent(in) :: dir
    call dump_open(dir, 'attention_backward', 'naive', cfg)
    call dump_array('q', q, [n, d])
    call dump_array('k', k, [n, d])
    call dump_array('v', v, [n, d])
    call dump_array('do', g, [n, d])
    call dump_array('p', p, [n, n])
    call dump_array('dq', dq, [n, d])
    call dump_array('dk', dk, [n, d])
    call dump_array('dv', dv, [n, d])
    dump = dump_close()
  end function dump

  subroutine teardown()
    if (allocated(q)) deallocate (q)
    if (allocated(k)) deallocate (k)
    if (allocated(v)) deallocate (v)
    if (allocated(g)) deallocate (g)
    if (allocated(p)) deallocate (p)
    if (allocated(ds)) deallocate (ds)
    if (allocated(dq)) deallocate (dq)
    if (allocated(dk)) deallocate (dk)
    if (allocated(dv)) deallocate (dv)
  end subroutine teardown

end module attention_backward_kernel

program attention_backward
  use attention_backward_kernel
  call harness_main('attention_backward', variants, .false., setup, poison, run, check, dump, teardown)
end program attention_backward
